// Linked into every executable and plugin of an ASan build (RILL_SANITIZE=address...): the
// options ASan starts with, before ASAN_OPTIONS from the environment (which a test may set
// and which overrides these one by one).
//
// intercept_tls_get_addr=0: the `__tls_get_addr` interceptor of GCC 12's sanitizer runtime
// (fixed upstream after GCC 13 / LLVM 16) takes a dynamic TLS block that happens to start
// at a certain page offset for a pre-2.25 glibc header and reads the two words before it
// as a block's address and length. LeakSanitizer's tracer then dies at exit ("Tracer caught
// signal 11 ... LeakSanitizer has encountered a fatal error") after a run that passed: seen
// here in gRPC trainers of the fit_a_line cluster tests. Without the interceptor, dynamic
// TLS is still scanned: glibc allocates it with malloc and the thread's DTV points at it.
//
// allocator_may_return_null=1: an allocation larger than ASan can make (a petabyte a test
// asks for, to see "out of memory" come back as an error) returns NULL as glibc's malloc
// does, instead of ending the process; Rill turns a NULL into that error.
extern "C" const char* __asan_default_options() { return "intercept_tls_get_addr=0:allocator_may_return_null=1"; }

// LeakSanitizer: oneDNN keeps buffers of its own (its primitive cache, a thread's scratch),
// allocated and dropped inside libdnnl; at exit LSan can find one unreachable, a leak that is
// not Rill's (seen once in a conv2d run of the ASan pass). Tests add their own suppressions
// (LSAN_OPTIONS=suppressions=FILE) on top of these.
extern "C" const char* __lsan_default_suppressions() { return "leak:libdnnl.so\n"; }
