#ifndef CLIBCURL_SHIM_H
#define CLIBCURL_SHIM_H

#include <curl/curl.h>

// curl_easy_setopt and curl_easy_getinfo are variadic (the option's value follows as `...`), which
// Swift cannot call. These shims fix the argument type for each kind of option attestd sets.
static inline CURLcode CLibCurl_setopt_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode CLibCurl_setopt_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode CLibCurl_setopt_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode CLibCurl_setopt_slist(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode CLibCurl_setopt_off(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}

// CURLOPT_WRITEFUNCTION and CURLOPT_HEADERFUNCTION take this callback type (curl.h names it
// curl_write_callback only for the write side).
typedef size_t (*CLibCurl_DataCallback)(char *data, size_t size, size_t count, void *context);
static inline CURLcode CLibCurl_setopt_callback(CURL *handle, CURLoption option, CLibCurl_DataCallback callback) {
    return curl_easy_setopt(handle, option, callback);
}

static inline CURLcode CLibCurl_getinfo_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}

// CURL_GLOBAL_DEFAULT is a macro built from other macros with '|', which Swift does not import.
static inline long CLibCurl_GLOBAL_DEFAULT(void) { return CURL_GLOBAL_DEFAULT; }

#endif
