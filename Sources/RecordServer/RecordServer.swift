// RecordServer
