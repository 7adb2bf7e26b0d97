// Linked into every executable and plugin of a TSan build (RILL_SANITIZE=thread): the
// options TSan starts with, before TSAN_OPTIONS from the environment.
//
// allocator_may_return_null=1: an allocation larger than TSan can make (a petabyte a test
// asks for, to see "out of memory" come back as an error) returns NULL as glibc's malloc
// does, instead of ending the process; Rill turns a NULL into that error.
extern "C" const char* __tsan_default_options() { return "allocator_may_return_null=1"; }
