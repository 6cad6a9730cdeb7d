"""`cubinrun history`: every result kept per commit (store, schema,
database, record, noise), change points per series (changes), the CI
verdict (check) and a static report (report, charts). docs/history.md."""
