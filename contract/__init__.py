"""The results contract: log schemas, folder layout and file names, atomic writes, run.json, summaries.

The ground floor: standard library and pyarrow only; every room may import it, it imports none."""
