"""The desk in a real browser (Debian's Chromium driven by Selenium) against real uvicorn on 127.0.0.1 and the
sample trial (ingested, backfilled offline; its first SAE week rewritten by a model that miscounts the SAE, so the
guard flags it): log in, find the flagged SAE week from the grid, follow a citation to its log entry, correct the
text with a reason and see the new version, the diff and the history, sign with the password asked again; a
reader cannot change anything; another project's reviewer cannot see the project.

DESK_SCREENSHOTS=1 rewrites docs/img/desk-*.png from this run (not a CHRONICLE_ name: tests/conftest.py clears
those)."""

from __future__ import annotations

import os
import re
import shutil
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from chronicle.settings import Settings
from tests.desk.conftest import PASSWORD
from tests.fakellm import FakeLLMServer
from tests.weekly.conftest import online  # noqa: F401  (the fake endpoint, as the weekly tests use it)

pytestmark = [pytest.mark.timeout(600),
              pytest.mark.skipif(not (shutil.which("chromium") and shutil.which("chromedriver")),
                                 reason="chromium and chromium-driver are installed by `make install`")]
IMG = Path(__file__).resolve().parents[2] / "docs" / "img"
SAE_WEEK = "2025-W24"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1400,1000")


def _miscounted_sae(request: dict[str, Any]) -> str:
    """A model that cites the week's SAE entry but says there were two."""
    prompt = "\n".join(str(m.get("content", "")) for m in request.get("messages", []))
    sae = re.search(r"\[(E\d+)\][^\n]*\|\s*sae\s*\|", prompt)
    cite = f" [{sae.group(1)}]" if sae else ""
    return f"## 本周要点\n\n- 本周发生 SAE 2 例，受试者因上消化道出血住院治疗{cite}。\n- 其余访视按计划进行。\n"


@pytest.fixture
def sample_desk(trial: Path, online: FakeLLMServer, monkeypatch: pytest.MonkeyPatch) -> Settings:  # noqa: F811
    from chronicle.flows.backfill_weeks import backfill_weeks
    from chronicle.flows.summarize_week import summarize_week
    from chronicle.services.accounts import add_user

    llm_url = os.environ["LLM_URL"]
    monkeypatch.delenv("LLM_URL")
    backfill_weeks("all")  # the offline engine: extractive text citing every entry it keeps
    monkeypatch.setenv("LLM_URL", llm_url)
    online.responder = _miscounted_sae
    row = summarize_week("XH201", SAE_WEEK, force=True)
    assert row.needs_review, row
    monkeypatch.delenv("LLM_URL")
    settings = Settings()
    add_user(settings, "ana", "Dr. Ana Li", PASSWORD, {"XH201": "reviewer"})
    add_user(settings, "rita", "Rita Reader", PASSWORD, {"XH201": "reader"})
    add_user(settings, "otto", "Otto Other", PASSWORD, {"XH305": "reviewer"})
    return settings


@contextmanager
def _served(settings: Settings) -> Iterator[str]:
    """The desk of `settings` served by uvicorn on a free loopback port, in this process (a thread)."""
    import uvicorn

    from chronicle.desk.app import create_app

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(settings), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    started = threading.Event()
    for _ in range(600):
        if server.started:
            started.set()
            break
        thread.join(0.05)
    assert started.is_set(), "the desk did not start"
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)


@pytest.fixture
def desk_url(sample_desk: Settings) -> Iterator[str]:
    """The sample's desk until the test ends."""
    with _served(sample_desk) as url:
        yield url


def _chromium(profile: Path, lang: str) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--lang={lang}")
    options.add_argument(f"--user-data-dir={profile}")
    options.binary_location = shutil.which("chromium") or "chromium"
    driver = webdriver.Chrome(options=options, service=Service(shutil.which("chromedriver")))
    driver.set_page_load_timeout(120)
    return driver


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    driver = _chromium(tmp_path / "chromium-profile", "zh-CN")
    yield driver
    driver.quit()


def _shot(driver: Any, name: str) -> None:
    if os.environ.get("DESK_SCREENSHOTS") == "1":
        IMG.mkdir(parents=True, exist_ok=True)
        # Every face loaded (the packaged CJK font arrives after the first paint) and the page from its top.
        driver.execute_async_script("const done = arguments[0]; document.fonts.ready.then(() => done(true));")
        driver.execute_script("window.scrollTo(0, 0);")
        driver.save_screenshot(str(IMG / f"desk-{name}.png"))


def _await(driver: Any, by: str, value: str) -> Any:
    """The element once the page a click started has loaded it: a click on a submit button returns before the
    browser has navigated, and a find at once may search the page being left."""
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, 60).until(expected_conditions.presence_of_element_located((by, value)))


def _login(driver: Any, url: str, username: str) -> None:
    from selenium.webdriver.common.by import By

    driver.delete_all_cookies()
    driver.get(url + "/")
    assert driver.current_url.endswith("/login")
    driver.find_element(By.ID, "username").send_keys(username)
    driver.find_element(By.ID, "password").send_keys(PASSWORD)
    driver.find_element(By.ID, "login").click()
    assert _await(driver, By.ID, "whoami").text.endswith(f"({username})")


def test_review_a_flagged_sae_week_in_the_browser(desk_url: str, browser: Any) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    driver = browser
    driver.get(desk_url + "/login")
    _shot(driver, "login")
    _login(driver, desk_url, "ana")
    _shot(driver, "grid")
    driver.find_element(By.LINK_TEXT, "XH201").click()  # the chronicle: a stats question answered from the stats
    driver.find_element(By.ID, "q").send_keys("哪几周发生了 SAE？")
    driver.find_element(By.CSS_SELECTOR, "#search button").click()
    results = _await(driver, By.ID, "results").text
    assert "counted in the stats" in results and SAE_WEEK in results and "(SAE 1)" in results
    _shot(driver, "chronicle")
    driver.find_element(By.ID, "nav-queue").click()
    assert SAE_WEEK in _await(driver, By.ID, "queue").text
    _shot(driver, "queue")
    driver.get(desk_url + "/")
    Select(driver.find_element(By.ID, "state")).select_by_value("flagged")  # desk.js submits the filter
    flagged = driver.find_element(By.CSS_SELECTOR, "#project-XH201 a.cell.flagged")
    assert flagged.get_attribute("data-week") == SAE_WEEK
    flagged.click()

    # The week: the questioned sentence carries the guard's reason; its citation opens the SAE entry.
    assert _await(driver, By.ID, "flagged").is_displayed()
    questioned = driver.find_element(By.CSS_SELECTOR, ".sentence.questioned")
    reason = questioned.find_element(By.CLASS_NAME, "reason").text
    assert "SAE 2 例" in questioned.text and "the log counts SAE = 1" in reason
    cite = questioned.find_element(By.CSS_SELECTOR, "a.cite")
    entry_id = cite.get_attribute("data-entry")
    cite.click()
    assert driver.current_url.endswith(f"#entry-{entry_id}")
    entry = driver.find_element(By.ID, f"entry-{entry_id}")
    assert "【SAE】" in entry.text and entry.find_element(By.CLASS_NAME, "type").text == "SAE"
    assert len(driver.find_elements(By.CSS_SELECTOR, ".entry")) == 1  # only what the text cites
    _shot(driver, "week")

    # Correct: the guard's preview, then a new version with the reason, its diff and history.
    driver.find_element(By.ID, "correct-link").click()
    text = _await(driver, By.ID, "text")
    fixed = text.get_attribute("value").replace("SAE 2 例", "SAE 1 例")
    text.clear()
    text.send_keys(fixed)
    driver.find_element(By.ID, "reason").send_keys("SAE 计数与流水账不符：1 例")
    driver.find_element(By.ID, "preview-btn").click()
    _shot(driver, "correct")
    questions = _await(driver, By.ID, "preview").find_elements(By.CSS_SELECTOR, "#preview-reasons li")
    assert not [q.text for q in questions if "count_mismatch" in q.text]  # the guard no longer questions the count
    assert not [q.text for q in questions if "= None" in q.text]  # a reason without a counted value shows none
    assert "+- 本周发生 SAE 1 例" in driver.find_element(By.ID, "preview-diff").text
    driver.find_element(By.ID, "save-btn").click()
    assert "Saved as version 3" in _await(driver, By.ID, "saved").text
    versions = driver.find_element(By.ID, "versions").text
    assert "edited ana" in versions and "SAE 计数与流水账不符" in versions
    assert "SAE 1 例" in driver.find_element(By.ID, "diff").text
    _shot(driver, "history")

    # Sign with the password asked again; the signature names the person, the time (UTC) and the meaning.
    driver.get(f"{desk_url}/p/XH201/w/{SAE_WEEK}/sign")
    Select(driver.find_element(By.ID, "meaning")).select_by_value("approved")
    driver.find_element(By.ID, "sign-password").send_keys(PASSWORD)
    driver.find_element(By.ID, "sign-btn").click()
    signature = _await(driver, By.CSS_SELECTOR, ".signature")
    assert "approved by Dr. Ana Li (ana)" in signature.text and "UTC, version 3" in signature.text
    assert not driver.find_elements(By.ID, "flagged")  # the sign-off cleared the flag of that version
    _shot(driver, "signed")

    # A reader sees the week and cannot change it.
    _login(driver, desk_url, "rita")
    driver.get(f"{desk_url}/p/XH201/w/{SAE_WEEK}")
    assert not driver.find_elements(By.ID, "correct-link") and not driver.find_elements(By.ID, "sign-link")
    driver.get(f"{desk_url}/p/XH201/w/{SAE_WEEK}/correct")
    assert "reader" in driver.find_element(By.ID, "error").text

    # Another project's reviewer does not see the project at all.
    _login(driver, desk_url, "otto")
    assert not driver.find_elements(By.ID, "project-XH201") and driver.find_elements(By.ID, "project-XH305")
    driver.get(f"{desk_url}/p/XH201/w/{SAE_WEEK}")
    assert "no such project" in driver.find_element(By.ID, "error").text


def test_chinese_text_is_drawn_in_an_english_browser_without_a_cjk_font(people: Settings, tmp_path: Path) -> None:
    """A clinician's browser set to English on a machine without a CJK font of its own (as this one): the
    history page's reason, Chinese from its first character, is drawn in the packaged CJK face (one em per
    character), not as empty boxes. Without the font asked for with the page, Chromium drew that cell before the
    face arrived and never redrew it."""
    from selenium.webdriver.common.by import By

    from chronicle.services.reports import edit_report, view_report
    from chronicle.weeks import IsoWeek
    from tests.desk.conftest import PROJECT, WEEKS

    week = IsoWeek.parse(WEEKS[1])
    reason = "补全本周入组受试者编号"
    text = view_report(people, PROJECT, week).row["summary"]
    edit_report(people, PROJECT, week, text + "\n复核：入组编号已核对。", author="ana", reason=reason, base_version=1)
    driver = _chromium(tmp_path / "chromium-profile", "en-US")
    try:
        with _served(people) as url:
            _login(driver, url, "ana")
            driver.get(f"{url}/p/{PROJECT}/w/{WEEKS[1]}/history")
            cell = _await(driver, By.CSS_SELECTOR, "#versions tr.v-2 td:nth-child(5)")
            assert cell.text == reason
            driver.execute_async_script("const done = arguments[0]; document.fonts.ready.then(() => done(true));")
            width, em = driver.execute_script(
                "const r = document.createRange(); r.selectNodeContents(arguments[0]);"
                "return [r.getBoundingClientRect().width, parseFloat(getComputedStyle(arguments[0]).fontSize)];", cell)
    finally:
        driver.quit()
    assert width >= 0.95 * em * len(reason), (width, em)  # an empty box is about 0.6 em wide


def test_chronicle_desk_starts_in_one_command_and_prints_where(tmp_path: Path, people: Settings) -> None:
    """`chronicle desk --port P`, a real process: the address on its first line, the login page with the headers,
    a week page with its link to the Prefect run that wrote it when the UI is known; SIGINT ends it."""
    import signal
    import subprocess
    import sys
    import urllib.request

    from tests.desk.web import client, login
    from tests.lake.helpers import child_env

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    script = "import sys; from chronicle.cli.main import app; sys.argv[0] = 'chronicle'; app()"
    proc = subprocess.Popen([sys.executable, "-c", script, "desk", "--port", str(port)], cwd=tmp_path,
                            env=child_env(people.home.resolve()), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert f"http://127.0.0.1:{port}/" in first, (first, proc.stderr.read() if proc.poll() is not None else "")
        for _ in range(1200):  # the line comes before uvicorn binds: wait for the port to answer
            with socket.socket() as probe:
                if probe.connect_ex(("127.0.0.1", port)) == 0 or proc.poll() is not None:
                    break
            threading.Event().wait(0.05)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/login", timeout=30) as page:
            assert page.status == 200 and page.headers["X-Frame-Options"] == "DENY"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(60)
    linked = people.updated(desk_prefect_ui_url="http://prefect.test:4200/")
    week = login(client(linked), "rita", PASSWORD).get("/p/XH201/w/2025-W30").text
    assert 'href="http://prefect.test:4200/runs/flow-run/test-run"' in week


def test_an_administrator_adds_a_nurse_who_chooses_her_own_password(people: Settings, tmp_path: Path) -> None:
    """As people do it: an admin of every project adds an account on the Accounts page with a temporary password;
    the new account signs in, lands on its own page whatever it asks for, chooses its own password and reads the
    project. Disabling an account asks once more first: dismissed, nothing changes."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from chronicle.services.accounts import add_user, get_account
    from tests.desk.conftest import PROJECT

    add_user(people, "root", "Rooted Admin", PASSWORD, {"*": "admin"})
    temporary, own = "handed over 1234", "nina's own passphrase"
    driver = _chromium(tmp_path / "chromium-profile", "en-US")
    try:
        with _served(people) as url:
            _login(driver, url, "root")
            driver.find_element(By.ID, "nav-accounts").click()
            _await(driver, By.ID, "add-form")
            for field, value in (("add-username", "nina"), ("add-name", "Nina Nurse"), ("add-password", temporary),
                                 ("add-project", PROJECT)):
                driver.find_element(By.ID, field).send_keys(value)
            Select(driver.find_element(By.ID, "add-role")).select_by_visible_text("reader")
            driver.find_element(By.ID, "add-btn").click()
            assert "nina added" in _await(driver, By.ID, "done").text
            _shot(driver, "accounts")
            driver.find_element(By.ID, "disable-rita").click()
            driver.switch_to.alert.dismiss()
            assert not get_account(people, "rita").disabled

            driver.delete_all_cookies()
            driver.get(f"{url}/p/{PROJECT}")
            driver.find_element(By.ID, "username").send_keys("nina")
            driver.find_element(By.ID, "password").send_keys(temporary)
            driver.find_element(By.ID, "login").click()
            assert "set by an administrator" in _await(driver, By.ID, "temporary").text
            driver.get(f"{url}/p/{PROJECT}")
            assert driver.current_url.endswith("/account")
            for field, value in (("current", temporary), ("new", own), ("repeat", own)):
                driver.find_element(By.ID, field).send_keys(value)
            driver.find_element(By.ID, "password-btn").click()
            _await(driver, By.ID, "changed")
            driver.get(f"{url}/p/{PROJECT}")
            assert driver.current_url.endswith(f"/p/{PROJECT}") and "Nina Nurse" in driver.page_source
    finally:
        driver.quit()
