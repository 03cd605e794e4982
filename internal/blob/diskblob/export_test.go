package diskblob

// NoDirect makes s write every blob through the page cache, as before
// direct writes (BenchmarkPutFromSocket compares both).
func NoDirect(s *Store) { s.noDirect = true }
