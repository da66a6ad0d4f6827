"""What a run shows: one evidence, several merged, the table of runs under a folder
(run_table*.py, `report --catalogue DIR`), a framework record,
as markdown, JSON, JUnit and plots (`parval report`).

May import: judge (--rejudge), the gates and the framework (their tables and records) and
every layer below; never claims (the disclosure of claims renders itself) or the api."""
