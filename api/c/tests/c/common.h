/* Helpers shared by the C test programs: status checks and a minimal .npy reader. Written only
 * against the public nnfw.h API. */
#ifndef NNFW_TEST_COMMON_H
#define NNFW_TEST_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nnfw.h"

/* Failed checks so far (a function-local static, so files that do not use it get no warning). */
static inline int *failure_count(void)
{
  static int n = 0;
  return &n;
}
#define g_failures (*failure_count())

static inline const char *status_name(NNFW_STATUS s)
{
  switch (s)
  {
    case NNFW_STATUS_NO_ERROR: return "NO_ERROR";
    case NNFW_STATUS_ERROR: return "ERROR";
    case NNFW_STATUS_UNEXPECTED_NULL: return "UNEXPECTED_NULL";
    case NNFW_STATUS_INVALID_STATE: return "INVALID_STATE";
    case NNFW_STATUS_OUT_OF_MEMORY: return "OUT_OF_MEMORY";
    case NNFW_STATUS_INSUFFICIENT_OUTPUT_SIZE: return "INSUFFICIENT_OUTPUT_SIZE";
    case NNFW_STATUS_DEPRECATED_API: return "DEPRECATED_API";
  }
  return "?";
}

/* Checks that a call returns the expected status; on a mismatch prints the call, both statuses
 * and the session's last error message, and counts a failure. */
#define EXPECT_STATUS(session, expected, call)                                                  \
  do                                                                                            \
  {                                                                                             \
    NNFW_STATUS got_ = (call);                                                                  \
    if (got_ != (expected))                                                                     \
    {                                                                                           \
      char msg_[1024] = "";                                                                     \
      if ((session) != NULL)                                                                    \
        nnfw_get_last_error_message((session), msg_, sizeof msg_);                              \
      fprintf(stderr, "%s:%d: %s returned %s, expected %s (last error: %s)\n", __FILE__,      \
              __LINE__, #call, status_name(got_), status_name(expected), msg_);                \
      g_failures++;                                                                             \
    }                                                                                           \
  } while (0)

#define EXPECT_OK(session, call) EXPECT_STATUS(session, NNFW_STATUS_NO_ERROR, call)

#define EXPECT_TRUE(cond)                                                                       \
  do                                                                                            \
  {                                                                                             \
    if (!(cond))                                                                                \
    {                                                                                           \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond);                      \
      g_failures++;                                                                             \
    }                                                                                           \
  } while (0)

/* Whether the program got between `min` and `max` arguments; otherwise prints
 * "usage: PROGRAM <args>" and returns 0. */
static inline int usage_ok(int argc, char **argv, int min, int max, const char *args)
{
  if (argc - 1 >= min && argc - 1 <= max)
    return 1;
  fprintf(stderr, "usage: %s %s\n", argv[0], args);
  return 0;
}

/* A new session (a failed nnfw_create_session counts as a failure). */
static inline nnfw_session *new_session(void)
{
  nnfw_session *s = NULL;
  EXPECT_OK(s, nnfw_create_session(&s));
  return s;
}

/* The exit status of a test program: 1 after failed checks (counted on stderr), else 0 after
 * printing `passed` (when not NULL). */
static inline int exit_status(const char *passed)
{
  if (g_failures)
    fprintf(stderr, "%d check(s) failed\n", g_failures);
  else if (passed)
    printf("%s\n", passed);
  return g_failures ? 1 : 0;
}

/* A .npy file: its dtype descriptor ("<f4", "|u1", ...) and its raw data. */
typedef struct
{
  char descr[16];
  unsigned char *data;
  size_t size;
} npy_array;

/* Reads a version 1/2 .npy file (C order). Returns 0 on success. */
static inline int npy_read(const char *path, npy_array *out)
{
  memset(out, 0, sizeof *out);
  FILE *f = fopen(path, "rb");
  if (!f)
    return -1;
  unsigned char magic[8];
  int rc = -1;
  char *header = NULL;
  if (fread(magic, 1, 8, f) != 8 || memcmp(magic, "\x93NUMPY", 6) != 0)
    goto done;
  size_t hlen;
  if (magic[6] == 1)
  {
    unsigned char b[2];
    if (fread(b, 1, 2, f) != 2)
      goto done;
    hlen = (size_t)b[0] | ((size_t)b[1] << 8);
  }
  else
  {
    unsigned char b[4];
    if (fread(b, 1, 4, f) != 4)
      goto done;
    hlen = (size_t)b[0] | ((size_t)b[1] << 8) | ((size_t)b[2] << 16) | ((size_t)b[3] << 24);
  }
  header = calloc(hlen + 1, 1);
  if (!header || fread(header, 1, hlen, f) != hlen)
    goto done;
  const char *d = strstr(header, "'descr':");
  if (!d || !(d = strchr(d + 8, '\'')))
    goto done;
  d++;
  size_t n = 0;
  while (d[n] && d[n] != '\'' && n + 1 < sizeof out->descr)
  {
    out->descr[n] = d[n];
    n++;
  }
  long start = ftell(f);
  fseek(f, 0, SEEK_END);
  long end = ftell(f);
  fseek(f, start, SEEK_SET);
  out->size = (size_t)(end - start);
  out->data = malloc(out->size ? out->size : 1);
  if (!out->data || fread(out->data, 1, out->size, f) != out->size)
    goto done;
  rc = 0;
done:
  free(header);
  fclose(f);
  if (rc != 0)
  {
    free(out->data);
    out->data = NULL;
  }
  return rc;
}

/* Bytes per element of an NNFW_TYPE. */
static inline size_t nnfw_type_size(NNFW_TYPE t)
{
  switch (t)
  {
    case NNFW_TYPE_TENSOR_FLOAT32:
    case NNFW_TYPE_TENSOR_INT32: return 4;
    case NNFW_TYPE_TENSOR_INT64: return 8;
    case NNFW_TYPE_TENSOR_QUANT16_SYMM_SIGNED: return 2;
    default: return 1;
  }
}

/* Bytes of a tensor described by an nnfw_tensorinfo. */
static inline size_t tensor_bytes(const nnfw_tensorinfo *ti)
{
  size_t n = 1;
  for (int32_t i = 0; i < ti->rank; i++)
    n *= (size_t)ti->dims[i];
  return n * nnfw_type_size(ti->dtype);
}

/* Index of the largest element of a float32 / uint8 / int8 buffer of n elements. */
static inline size_t argmax(const void *buf, size_t n, NNFW_TYPE t)
{
  size_t best = 0;
  for (size_t i = 1; i < n; i++)
  {
    double a, b;
    if (t == NNFW_TYPE_TENSOR_FLOAT32)
    {
      a = ((const float *)buf)[i];
      b = ((const float *)buf)[best];
    }
    else if (t == NNFW_TYPE_TENSOR_QUANT8_ASYMM_SIGNED)
    {
      a = ((const int8_t *)buf)[i];
      b = ((const int8_t *)buf)[best];
    }
    else
    {
      a = ((const uint8_t *)buf)[i];
      b = ((const uint8_t *)buf)[best];
    }
    if (a > b)
      best = i;
  }
  return best;
}

#endif
