-- Who runs a flow run, so a row left RUNNING by a process that was killed (kill -9, OOM, a reboot) can be
-- told apart from a live one and marked CRASHED; and the run's name as the Prefect UI shows it.
ALTER TABLE pipeline_runs ADD COLUMN run_name VARCHAR;
ALTER TABLE pipeline_runs ADD COLUMN host VARCHAR;         -- socket.gethostname() of the process running it
ALTER TABLE pipeline_runs ADD COLUMN pid INTEGER;
ALTER TABLE pipeline_runs ADD COLUMN pid_started DOUBLE;   -- that process's start time (epoch s): a reused pid is another process
