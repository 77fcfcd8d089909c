#ifndef HAUL_COPENSSL_SHIM_H
#define HAUL_COPENSSL_SHIM_H

#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

// OpenSSL is not linked: the functions Haul calls are defined in OpenSSLLoader.c, which loads libssl and
// libcrypto with dlopen the first time one is called, so that a plain-HTTP run never maps them (they were
// 1.7 MiB of a download's resident memory, mostly their relocations). Call this first where a failure can
// be reported: 1 when the libraries are loaded, else 0 with the reason in `message`.
int haul_openssl_load(char *message, unsigned long capacity);

// OpenSSL spells these as macros, which Swift cannot call.
static inline long haul_SSL_set_tlsext_host_name(SSL *ssl, const char *name) {
    return SSL_set_tlsext_host_name(ssl, name);
}

static inline int haul_SSL_CTX_set_min_proto_version(SSL_CTX *ctx, int version) {
    return (int)SSL_CTX_set_min_proto_version(ctx, version);
}

static inline long haul_SSL_CTX_set_session_cache_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_session_cache_mode(ctx, mode);
}

static inline long haul_SSL_CTX_set_mode(SSL_CTX *ctx, long mode) {
    return SSL_CTX_set_mode(ctx, mode);
}

// OpenSSL 3 reports a peer that closed without close_notify as this SSL error rather than as EOF.
static inline int haul_ERR_is_unexpected_eof(unsigned long error) {
    return ERR_GET_LIB(error) == ERR_LIB_SSL && ERR_GET_REASON(error) == SSL_R_UNEXPECTED_EOF_WHILE_READING;
}

static inline long haul_SSL_CTX_set_read_ahead(SSL_CTX *ctx, int yes) {
    return SSL_CTX_set_read_ahead(ctx, yes);
}

static inline long haul_SSL_CTX_set_max_proto_version(SSL_CTX *ctx, int version) {
    return SSL_CTX_set_max_proto_version(ctx, version);
}

#endif
