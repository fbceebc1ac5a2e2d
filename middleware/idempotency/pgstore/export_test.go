package pgstore

// SchemaOf is the SQL CreateSchema runs for table.
func SchemaOf(table string) string { return render(table).schema }
