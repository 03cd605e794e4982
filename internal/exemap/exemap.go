// Package exemap asks the kernel to map the coffer executable's own pages
// one at a time, as they are used, instead of in blocks around each use.
//
// A Go server touches a few hundred scattered pages of its executable
// while it starts (package inits, the runtime's itab table, stack maps):
// Linux answers each such fault by mapping the 64 KiB around it that the
// page cache holds ("fault-around"), or a whole 2 MiB folio, and reads
// ahead up to read_ahead_kb around it on a cold cache. So a 75 MB coffer
// counted 35–40 MiB of its executable in its RSS for ~420 pages it had
// touched (docs/PERFORMANCE.md, "Issue 23, second pass: idle RSS").
//
// On Linux, when imported (cmd/coffer imports it first, so its init runs
// before the heavy package inits), it advises every mapping of the
// executable file:
//
//   - MADV_RANDOM: no read-ahead on a fault (a cold start reads only the
//     pages it touches);
//   - MADV_NOHUGEPAGE: no 2 MiB mapping of a large page-cache folio;
//   - on amd64 and arm64, the read-only mappings (text, rodata, pclntab)
//     are registered with a userfaultfd in asynchronous write-protect
//     mode, which is the one per-mapping switch Linux has that turns
//     fault-around off (mm/memory.c, should_fault_around). Nothing is ever
//     write-protected and no thread serves the descriptor: the kernel
//     resolves everything itself. The descriptor stays open for the life
//     of the process (closing it would undo the registration). Where
//     userfaultfd is refused (a seccomp profile, an old kernel), only the
//     two advices apply.
//
// The init drops no page once it is mapped: pages touched are resident
// as before; pages never touched are not mapped. The price is one page
// fault per 4 KiB page first touched instead of one per 64 KiB
// (docs/PERFORMANCE.md, "Issue 23, third pass: idle RSS"). Release, which
// the server's idle trim calls, unmaps the read-only pages mapped so far
// (the page cache keeps them; what runs next maps back what it touches:
// "Issue 23, fourth pass: idle RSS after a burst").
//
// COFFER_EXEC_ADVICE=off leaves the kernel's defaults. On other systems
// the package does nothing.
package exemap

// Result says what the init did.
type Result struct {
	Mappings int    // the executable's mappings found in /proc/self/maps
	Advised  int    // of those, given MADV_RANDOM (and MADV_NOHUGEPAGE where the kernel has huge pages)
	Lazy     int    // read-only ones registered with the userfaultfd (fault-around off)
	Off      bool   // COFFER_EXEC_ADVICE=off
	Err      string // why it stopped early or skipped a step; empty if it did not
}

var result Result

// Report returns what the package's init did.
func Report() Result { return result }
