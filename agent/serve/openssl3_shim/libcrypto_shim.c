/* libcrypto.so for civetweb on OpenSSL 3: civetweb also dlopen()s
 * "libcrypto.so", which only libssl-dev installs. This library has that
 * soname and depends on the real libcrypto.so.3, so the dlopen() returns it
 * (already loaded as roced's dependency) and dlsym() finds the real
 * functions through it. Nothing is missing from libcrypto.so.3; this file
 * only supplies the name. See libssl_shim.c. */

/* Referenced by roced so the linker keeps this library as a dependency. */
int roced_civetweb_libcrypto_shim(void);
int roced_civetweb_libcrypto_shim(void) { return 1; }
