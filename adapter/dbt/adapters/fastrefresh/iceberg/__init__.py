"""What is read from and committed to an Iceberg table: columns, snapshots and their
summaries, the files a commit touched; through SQL or Iceberg's Java API."""
