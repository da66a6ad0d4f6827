"""What a run shows: one evidence, several merged, a catalogue of runs, a framework record,
as markdown, JSON, JUnit and plots (`parval report`).

May import: judge (--rejudge), the gates and the framework (their tables and records) and
every layer below; never claims (the disclosure of claims renders itself) or the api."""
