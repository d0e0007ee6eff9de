#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H

#include <openssl/bn.h>
#include <openssl/cms.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

// Swift cannot import the typed STACK_OF(X509) helpers: in OpenSSL 3 they are macros over
// OPENSSL_sk_*. These shims give them a single, typed spelling.
static inline STACK_OF(X509) *COpenSSL_sk_X509_new_null(void) { return sk_X509_new_null(); }
static inline int COpenSSL_sk_X509_push(STACK_OF(X509) *stack, X509 *cert) { return sk_X509_push(stack, cert); }
static inline void COpenSSL_sk_X509_free(STACK_OF(X509) *stack) { sk_X509_free(stack); }
static inline int COpenSSL_sk_X509_num(const STACK_OF(X509) *stack) { return sk_X509_num(stack); }
static inline X509 *COpenSSL_sk_X509_value(const STACK_OF(X509) *stack, int index) { return sk_X509_value(stack, index); }
// Frees the stack and drops one reference to each certificate (for CMS_get1_certs' result).
static inline void COpenSSL_sk_X509_pop_free(STACK_OF(X509) *stack) { sk_X509_pop_free(stack, X509_free); }

// STACK_OF(CMS_SignerInfo) has the same macro-only accessors.
static inline int COpenSSL_sk_CMS_SignerInfo_num(const STACK_OF(CMS_SignerInfo) *stack) { return sk_CMS_SignerInfo_num(stack); }
static inline CMS_SignerInfo *COpenSSL_sk_CMS_SignerInfo_value(const STACK_OF(CMS_SignerInfo) *stack, int index) {
    return sk_CMS_SignerInfo_value(stack, index);
}

static inline int COpenSSL_sk_X509_OBJECT_num(const STACK_OF(X509_OBJECT) *stack) { return sk_X509_OBJECT_num(stack); }

// MBSTRING_ASC is a macro built from other macros with '|', which Swift does not import.
static inline int COpenSSL_MBSTRING_ASC(void) { return MBSTRING_ASC; }

#endif
