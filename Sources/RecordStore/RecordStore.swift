// RecordStore
