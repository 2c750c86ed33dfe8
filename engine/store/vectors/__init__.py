"""The vector tables on LanceDB (a folder or s3://): one table per embedding model, rows, purges, versions."""
