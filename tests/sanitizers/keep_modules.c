/*
 * keep_modules.c: an LD_PRELOAD library for the sanitized stage whose
 * dlclose() keeps every shared object mapped.
 *
 * Why: LeakSanitizer names a leak's modules when the process exits, and
 * PoCL unloads its device drivers (and LLVM with them) before that, so a
 * leak that PoCL allocated once per process shows as "<unknown module>",
 * which no suppression (lsan.supp) can match. The stage used to take every
 * malloc's stack with the slow unwinder (fast_unwind_on_malloc=0), whose
 * deeper frames reach a module still loaded (libOpenCL, libpocl); that
 * slow unwind on each of LLVM's mallocs doubled the stage's time. With the
 * modules kept, the fast unwinder's first frames name them.
 *
 * Never sanitized (preloaded ahead of the sanitizer runtime:
 * verify_asan_link_order=0). Nothing of clsolve calls dlclose.
 */
int dlclose(void *handle);

int dlclose(void *handle)
{
    (void)handle;
    return 0;
}
