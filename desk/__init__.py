"""The review desk: a local web application (FastAPI, server-rendered Jinja2 pages) where clinicians read the
chronicle, follow citations to the log, correct, review and sign weeks; it reads and writes only through the use
cases."""
