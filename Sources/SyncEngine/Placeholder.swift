// Placeholder until the module lands; delete when adding real files.
