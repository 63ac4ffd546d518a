// The two libraries of agent/openssl3_shim (see libssl_shim.c): calling
// these makes the linker record them as dependencies of the binary.
#pragma once

extern "C" {
int roced_civetweb_libssl_shim(void);
int roced_civetweb_libcrypto_shim(void);
}
