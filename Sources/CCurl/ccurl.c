#include "ccurl.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Only curl.h's types and constants are used at build time; the functions come from dlopen.
static struct {
    CURLcode (*global_init)(long);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
    CURLcode (*easy_perform)(CURL *);
    CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
    void (*easy_cleanup)(CURL *);
    const char *(*easy_strerror)(CURLcode);
    struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
    void (*slist_free_all)(struct curl_slist *);
} api;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static int loaded = 0;
static char load_error[200];

static void load(void) {
    void *library = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!library) library = dlopen("libcurl.so", RTLD_NOW | RTLD_LOCAL);
    if (!library) {
        snprintf(load_error, sizeof load_error, "HTTPS needs libcurl (libcurl.so.4), which cannot be loaded");
        return;
    }
#define LOAD(field, symbol)                                                                  \
    do {                                                                                     \
        *(void **)(&api.field) = dlsym(library, symbol);                                     \
        if (!api.field) {                                                                    \
            snprintf(load_error, sizeof load_error, "libcurl lacks %s", symbol);             \
            return;                                                                          \
        }                                                                                    \
    } while (0)
    LOAD(global_init, "curl_global_init");
    LOAD(easy_init, "curl_easy_init");
    LOAD(easy_setopt, "curl_easy_setopt");
    LOAD(easy_perform, "curl_easy_perform");
    LOAD(easy_getinfo, "curl_easy_getinfo");
    LOAD(easy_cleanup, "curl_easy_cleanup");
    LOAD(easy_strerror, "curl_easy_strerror");
    LOAD(slist_append, "curl_slist_append");
    LOAD(slist_free_all, "curl_slist_free_all");
#undef LOAD
    if (api.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        snprintf(load_error, sizeof load_error, "libcurl failed to initialize");
        return;
    }
    loaded = 1;
}

typedef struct {
    unsigned char *bytes;
    size_t length;
    size_t capacity;
} growing_buffer;

static size_t append_body(char *data, size_t size, size_t count, void *context) {
    growing_buffer *buffer = context;
    size_t length = size * count;
    if (buffer->length + length > buffer->capacity) {
        size_t capacity = buffer->capacity ? buffer->capacity : 16384;
        while (capacity < buffer->length + length) capacity *= 2;
        unsigned char *grown = realloc(buffer->bytes, capacity);
        if (!grown) return 0;  // makes curl fail with CURLE_WRITE_ERROR
        buffer->bytes = grown;
        buffer->capacity = capacity;
    }
    memcpy(buffer->bytes + buffer->length, data, length);
    buffer->length += length;
    return length;
}

int ccurl_perform(const char *method, const char *url, const char *const *headers, size_t header_count,
                  const unsigned char *body, size_t body_length, long timeout_milliseconds, ccurl_response *response) {
    memset(response, 0, sizeof *response);
    pthread_once(&load_once, load);
    if (!loaded) {
        snprintf(response->error, sizeof response->error, "%s", load_error);
        return 2;
    }
    CURL *handle = api.easy_init();
    if (!handle) {
        snprintf(response->error, sizeof response->error, "libcurl could not make a handle");
        return 1;
    }
    struct curl_slist *list = NULL;
    for (size_t index = 0; index < header_count; index++) list = api.slist_append(list, headers[index]);
    list = api.slist_append(list, "Expect:");  // no 100-continue round trip
    growing_buffer buffer = {0};
    char error[CURL_ERROR_SIZE] = {0};
    api.easy_setopt(handle, CURLOPT_URL, url);
    api.easy_setopt(handle, CURLOPT_CUSTOMREQUEST, method);
    api.easy_setopt(handle, CURLOPT_HTTPHEADER, list);
    api.easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
    api.easy_setopt(handle, CURLOPT_TIMEOUT_MS, timeout_milliseconds);
    api.easy_setopt(handle, CURLOPT_ERRORBUFFER, error);
    api.easy_setopt(handle, CURLOPT_WRITEFUNCTION, append_body);
    api.easy_setopt(handle, CURLOPT_WRITEDATA, &buffer);
    // "": ask for every coding this libcurl can inflate (gzip at least) and inflate the answer.
    api.easy_setopt(handle, CURLOPT_ACCEPT_ENCODING, "");
    if (body) {
        api.easy_setopt(handle, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body_length);
        api.easy_setopt(handle, CURLOPT_POSTFIELDS, (const char *)body);
    }
    CURLcode code = api.easy_perform(handle);
    int result = 0;
    if (code == CURLE_OK) {
        api.easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &response->status);
        response->body = buffer.bytes;
        response->body_length = buffer.length;
    } else {
        snprintf(response->error, sizeof response->error, "%s", error[0] ? error : api.easy_strerror(code));
        free(buffer.bytes);
        result = code == CURLE_OPERATION_TIMEDOUT ? 3 : 1;
    }
    api.slist_free_all(list);
    api.easy_cleanup(handle);
    return result;
}

void ccurl_response_free(ccurl_response *response) {
    free(response->body);
    response->body = NULL;
    response->body_length = 0;
}
