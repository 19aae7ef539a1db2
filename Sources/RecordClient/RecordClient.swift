// RecordClient
