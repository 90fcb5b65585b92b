"""Where the database is: the file a command opens unless told otherwise, and the environment
variable that tells it otherwise. Apart from `db`, so that a command's options can say them
without loading SQLite's libraries."""

DEFAULT_DB = "analyzer.db"
DB_ENV = "ANALYZER_DB"
