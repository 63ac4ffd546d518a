/* libssl.so for civetweb on OpenSSL 3 (linked into roced, found through its
 * RUNPATH; docs/design.md, "Metrics endpoint").
 *
 * Debian 12's civetweb 1.15 is built against the OpenSSL 1.1 API and, at run
 * time, dlopen()s "libssl.so" and looks its functions up by name. OpenSSL 3
 * turned SSL_get_peer_certificate into a macro for SSL_get1_peer_certificate,
 * so libssl.so.3 has no such symbol: civetweb stores NULL for it and calls it
 * after every TLS handshake, and the first HTTPS request crashes the agent
 * (civetweb issue #1334, fixed upstream after 1.15).
 *
 * This library has the soname "libssl.so", so civetweb's dlopen("libssl.so")
 * returns it (already loaded as roced's dependency) instead of searching the
 * disk for libssl-dev's symlink. It defines the missing function and depends
 * on the real libssl.so.3, where dlsym() finds every other one.
 *
 * Remove it (and libcrypto_shim.c) once the distribution's civetweb either
 * is built with OPENSSL_API_3_0 (civetweb >= 1.16 looks up
 * SSL_get1_peer_certificate) or links OpenSSL directly (NO_SSL_DL); a test
 * with plain libssl-dev then shows the first HTTPS request answered. */
#include <openssl/ssl.h>

#undef SSL_get_peer_certificate

/* Same contract as the OpenSSL 1.1 function: the caller owns a reference. */
X509 *SSL_get_peer_certificate(const SSL *ssl);
X509 *SSL_get_peer_certificate(const SSL *ssl) { return SSL_get1_peer_certificate(ssl); }

/* Referenced by roced so the linker keeps this library as a dependency. */
int roced_civetweb_libssl_shim(void);
int roced_civetweb_libssl_shim(void) { return 1; }
