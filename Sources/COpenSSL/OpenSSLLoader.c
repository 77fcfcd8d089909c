// Loads libssl and libcrypto on first use instead of at process start (see COpenSSL.h).
//
// Each function Haul uses is defined here under OpenSSL's own name, with OpenSSL's own prototype from its
// headers (so the compiler checks every signature), and calls through a pointer looked up with dlsym.
// They are hidden: a test binary that also links the real libraries (HaulTestSupport does, for its CA)
// resolves Haul's calls to these and does not export them over OpenSSL's internal calls.

#include "COpenSSL.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HAUL_TEXT(x) #x
#define HAUL_NUMBER(x) HAUL_TEXT(x)
// The shared-library version the headers were written for (3 for OpenSSL 3.x).
#define HAUL_LIBSSL "libssl.so." HAUL_NUMBER(OPENSSL_SHLIB_VERSION)
#define HAUL_LIBCRYPTO "libcrypto.so." HAUL_NUMBER(OPENSSL_SHLIB_VERSION)

// X(library, return type, name, parameters, arguments); VX for functions returning void.
#define HAUL_OPENSSL_FUNCTIONS(X, VX) \
    X(ssl, const BIO_METHOD *, BIO_f_ssl, (void), ()) \
    X(ssl, long, SSL_CTX_ctrl, (SSL_CTX *ctx, int cmd, long larg, void *parg), (ctx, cmd, larg, parg)) \
    VX(ssl, SSL_CTX_free, (SSL_CTX *ctx), (ctx)) \
    X(ssl, int, SSL_CTX_check_private_key, (const SSL_CTX *ctx), (ctx)) \
    X(ssl, int, SSL_CTX_load_verify_locations, (SSL_CTX *ctx, const char *file, const char *path), (ctx, file, path)) \
    X(ssl, SSL_CTX *, SSL_CTX_new, (const SSL_METHOD *method), (method)) \
    VX(ssl, SSL_CTX_sess_set_new_cb, (SSL_CTX *ctx, int (*callback)(struct ssl_st *, SSL_SESSION *)), (ctx, callback)) \
    VX(ssl, SSL_CTX_set_default_read_buffer_len, (SSL_CTX *ctx, size_t length), (ctx, length)) \
    VX(ssl, SSL_CTX_set_default_passwd_cb, (SSL_CTX *ctx, pem_password_cb *callback), (ctx, callback)) \
    VX(ssl, SSL_CTX_set_default_passwd_cb_userdata, (SSL_CTX *ctx, void *userdata), (ctx, userdata)) \
    X(ssl, int, SSL_CTX_set_default_verify_paths, (SSL_CTX *ctx), (ctx)) \
    X(ssl, int, SSL_CTX_use_PrivateKey_file, (SSL_CTX *ctx, const char *file, int type), (ctx, file, type)) \
    X(ssl, int, SSL_CTX_use_certificate_chain_file, (SSL_CTX *ctx, const char *file), (ctx, file)) \
    VX(ssl, SSL_SESSION_free, (SSL_SESSION *session), (session)) \
    X(ssl, int, SSL_SESSION_get_protocol_version, (const SSL_SESSION *session), (session)) \
    X(ssl, int, SSL_SESSION_is_resumable, (const SSL_SESSION *session), (session)) \
    X(ssl, int, SSL_connect, (SSL *ssl), (ssl)) \
    X(ssl, long, SSL_ctrl, (SSL *ssl, int cmd, long larg, void *parg), (ssl, cmd, larg, parg)) \
    VX(ssl, SSL_free, (SSL *ssl), (ssl)) \
    VX(ssl, SSL_get0_alpn_selected, (const SSL *ssl, const unsigned char **data, unsigned int *length), (ssl, data, length)) \
    X(ssl, X509_VERIFY_PARAM *, SSL_get0_param, (SSL *ssl), (ssl)) \
    X(ssl, int, SSL_get_error, (const SSL *ssl, int result), (ssl, result)) \
    X(ssl, void *, SSL_get_ex_data, (const SSL *ssl, int index), (ssl, index)) \
    X(ssl, long, SSL_get_verify_result, (const SSL *ssl), (ssl)) \
    X(ssl, const char *, SSL_get_version, (const SSL *ssl), (ssl)) \
    X(ssl, int, SSL_has_pending, (const SSL *ssl), (ssl)) \
    X(ssl, SSL *, SSL_new, (SSL_CTX *ctx), (ctx)) \
    X(ssl, int, SSL_peek_ex, (SSL *ssl, void *buffer, size_t count, size_t *read), (ssl, buffer, count, read)) \
    X(ssl, int, SSL_read_ex, (SSL *ssl, void *buffer, size_t count, size_t *read), (ssl, buffer, count, read)) \
    X(ssl, int, SSL_session_reused, (const SSL *ssl), (ssl)) \
    X(ssl, int, SSL_set1_host, (SSL *ssl, const char *host), (ssl, host)) \
    X(ssl, int, SSL_set_alpn_protos, (SSL *ssl, const unsigned char *protocols, unsigned int length), (ssl, protocols, length)) \
    VX(ssl, SSL_set_bio, (SSL *ssl, BIO *read, BIO *write), (ssl, read, write)) \
    X(ssl, int, SSL_set_ex_data, (SSL *ssl, int index, void *data), (ssl, index, data)) \
    X(ssl, int, SSL_set_fd, (SSL *ssl, int fd), (ssl, fd)) \
    VX(ssl, SSL_set_hostflags, (SSL *ssl, unsigned int flags), (ssl, flags)) \
    X(ssl, int, SSL_set_session, (SSL *ssl, SSL_SESSION *session), (ssl, session)) \
    VX(ssl, SSL_set_verify, (SSL *ssl, int mode, SSL_verify_cb callback), (ssl, mode, callback)) \
    X(ssl, int, SSL_shutdown, (SSL *ssl), (ssl)) \
    X(ssl, int, SSL_write_ex, (SSL *ssl, const void *buffer, size_t count, size_t *written), (ssl, buffer, count, written)) \
    X(ssl, const SSL_METHOD *, TLS_client_method, (void), ()) \
    X(crypto, long, BIO_ctrl, (BIO *bio, int cmd, long larg, void *parg), (bio, cmd, larg, parg)) \
    X(crypto, BIO *, BIO_new, (const BIO_METHOD *method), (method)) \
    VX(crypto, ERR_clear_error, (void), ()) \
    X(crypto, unsigned long, ERR_get_error, (void), ()) \
    X(crypto, unsigned long, ERR_peek_error, (void), ()) \
    X(crypto, const char *, ERR_reason_error_string, (unsigned long error), (error)) \
    X(crypto, int, EVP_DigestFinal_ex, (EVP_MD_CTX *ctx, unsigned char *digest, unsigned int *length), (ctx, digest, length)) \
    X(crypto, int, EVP_DigestInit_ex, (EVP_MD_CTX *ctx, const EVP_MD *type, ENGINE *engine), (ctx, type, engine)) \
    X(crypto, int, EVP_DigestUpdate, (EVP_MD_CTX *ctx, const void *data, size_t count), (ctx, data, count)) \
    VX(crypto, EVP_MD_CTX_free, (EVP_MD_CTX *ctx), (ctx)) \
    X(crypto, EVP_MD_CTX *, EVP_MD_CTX_new, (void), ()) \
    X(crypto, const EVP_MD *, EVP_md5, (void), ()) \
    X(crypto, const EVP_MD *, EVP_sha1, (void), ()) \
    X(crypto, const EVP_MD *, EVP_sha256, (void), ()) \
    X(crypto, const EVP_MD *, EVP_sha512, (void), ()) \
    X(crypto, int, X509_VERIFY_PARAM_set1_ip_asc, (X509_VERIFY_PARAM *param, const char *address), (param, address)) \
    X(crypto, const char *, X509_verify_cert_error_string, (long code), (code))

#define HAUL_INDEX(library, type, name, parameters, arguments) haul_index_##name,
#define HAUL_VOID_INDEX(library, name, parameters, arguments) haul_index_##name,
enum { HAUL_OPENSSL_FUNCTIONS(HAUL_INDEX, HAUL_VOID_INDEX) haul_function_count };

#define HAUL_FROM_ssl 1
#define HAUL_FROM_crypto 0
#define HAUL_ENTRY(library, type, name, parameters, arguments) { #name, HAUL_FROM_##library },
#define HAUL_VOID_ENTRY(library, name, parameters, arguments) { #name, HAUL_FROM_##library },
static const struct { const char *name; int fromSSL; } haul_functions[haul_function_count] = {
    HAUL_OPENSSL_FUNCTIONS(HAUL_ENTRY, HAUL_VOID_ENTRY)
};

static void *haul_pointers[haul_function_count];
static pthread_once_t haul_once = PTHREAD_ONCE_INIT;
static int haul_loaded;
static char haul_failure[512];

static void haul_load_once(void) {
    // libssl brings libcrypto; both stay loaded for the life of the process (never dlclose'd: OpenSSL's
    // own exit handler runs from them).
    void *ssl = dlopen(HAUL_LIBSSL, RTLD_NOW | RTLD_LOCAL);
    void *crypto = ssl ? dlopen(HAUL_LIBCRYPTO, RTLD_NOW | RTLD_LOCAL) : NULL;
    if (!ssl || !crypto) {
        const char *reason = dlerror();
        snprintf(haul_failure, sizeof haul_failure, "cannot load %s: %s", ssl ? HAUL_LIBCRYPTO : HAUL_LIBSSL,
                 reason ? reason : "unknown error");
        return;
    }
    for (int index = 0; index < haul_function_count; index++) {
        void *pointer = dlsym(haul_functions[index].fromSSL ? ssl : crypto, haul_functions[index].name);
        if (!pointer) {
            snprintf(haul_failure, sizeof haul_failure, "%s has no %s", haul_functions[index].fromSSL ? HAUL_LIBSSL : HAUL_LIBCRYPTO,
                     haul_functions[index].name);
            return;
        }
        haul_pointers[index] = pointer;
    }
    haul_loaded = 1;
}

int haul_openssl_load(char *message, unsigned long capacity) {
    pthread_once(&haul_once, haul_load_once);
    if (!haul_loaded && message && capacity) snprintf(message, capacity, "%s", haul_failure);
    return haul_loaded;
}

// Reached only by a caller that did not check haul_openssl_load first (for example a checksum): there is no
// error value to return from OpenSSL's signature, so say why and stop.
static void *haul_function(int index) {
    pthread_once(&haul_once, haul_load_once);
    if (!haul_loaded) {
        fprintf(stderr, "haul: %s\n", haul_failure);
        abort();
    }
    return haul_pointers[index];
}

#define HAUL_STUB(library, type, name, parameters, arguments) \
    __attribute__((visibility("hidden"))) type name parameters { \
        return ((type (*) parameters)haul_function(haul_index_##name)) arguments; \
    }
#define HAUL_VOID_STUB(library, name, parameters, arguments) \
    __attribute__((visibility("hidden"))) void name parameters { \
        ((void (*) parameters)haul_function(haul_index_##name)) arguments; \
    }
HAUL_OPENSSL_FUNCTIONS(HAUL_STUB, HAUL_VOID_STUB)
