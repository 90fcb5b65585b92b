"""The sample corpora shipped with analyzer, installed as `analyzer.parallel_corpora` so that
`analyzer ingest` with no path works from an installed wheel as from a checkout."""
