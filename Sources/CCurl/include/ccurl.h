#ifndef CCURL_H
#define CCURL_H

#include <stddef.h>

/// The answer of one HTTPS exchange made through libcurl.
typedef struct {
    long status;
    unsigned char *body;
    size_t body_length;
    char error[256];
} ccurl_response;

/// Performs one request through libcurl, loaded with dlopen on first use so that programs
/// which never speak HTTPS never load it. Returns 0 when an answer arrived (any status), 1
/// when the exchange failed (error says why), 2 when libcurl cannot be loaded, 3 on timeout.
int ccurl_perform(const char *method, const char *url, const char *const *headers, size_t header_count,
                  const unsigned char *body, size_t body_length, long timeout_milliseconds, ccurl_response *response);

/// Frees the body of an answer.
void ccurl_response_free(ccurl_response *response);

#endif
