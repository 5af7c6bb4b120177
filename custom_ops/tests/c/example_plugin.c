/* A custom-op plugin written in C against nnrt_plugin.h, built by the nnrt-custom-ops tests.
 *   CAddOne: y = x + 1 (float32), with a shape function (y has x's shape).
 *   CFail:   always fails with status 7 and a message.
 * Build with -DPLUGIN_VERSION=N to pretend another ABI version, and with -DHOST_VERSION=1u
 * -DPLUGIN_VERSION=1u to be a plugin built against version 1 of the header (which accepts only
 * a version 1 host and fills only version 1's fields). */
#include <stdio.h>
#include <string.h>

#include "nnrt_plugin.h"

#ifndef HOST_VERSION
#define HOST_VERSION NNRT_PLUGIN_ABI_VERSION
#endif

#ifndef PLUGIN_VERSION
#define PLUGIN_VERSION NNRT_PLUGIN_ABI_VERSION
#endif

/* The layout Rust's #[repr(C)] mirror assumes (64-bit targets). */
_Static_assert(sizeof(void *) != 8 || sizeof(nnrt_plugin_tensor) == 56, "nnrt_plugin_tensor layout");
_Static_assert(sizeof(void *) != 8 || sizeof(nnrt_plugin_kernel_params) == 48, "params layout");
_Static_assert(sizeof(void *) != 8 || sizeof(nnrt_plugin_op) == 32, "op layout");
_Static_assert(sizeof(void *) != 8 || sizeof(nnrt_plugin_info) == 48, "info layout");
_Static_assert(sizeof(void *) != 8 || sizeof(nnrt_plugin_host) == 16, "host layout");

static size_t elements(const nnrt_plugin_tensor *t) {
  size_t n = 1;
  for (int i = 0; i < t->rank; i++) n *= (size_t)t->dims[i];
  return n;
}

static int32_t add_one(void *op_data, const nnrt_plugin_kernel_params *p, char *error, size_t error_size) {
  (void)op_data;
  if (p->ninputs != 1 || p->noutputs != 1 || p->inputs[0].dtype != NNRT_PLUGIN_FLOAT32) {
    snprintf(error, error_size, "CAddOne takes one float32 input and one output");
    return 1;
  }
  const float *x = (const float *)p->inputs[0].data;
  float *y = (float *)p->outputs[0].data;
  size_t n = elements(&p->outputs[0]);
  if (n * sizeof(float) != p->outputs[0].size || n != elements(&p->inputs[0])) {
    snprintf(error, error_size, "CAddOne: sizes disagree");
    return 2;
  }
  for (size_t i = 0; i < n; i++) y[i] = x[i] + 1.0f;
  return 0;
}

static int32_t add_one_shape(void *op_data, nnrt_plugin_kernel_params *p, char *error, size_t error_size) {
  (void)op_data;
  if (p->ninputs != 1 || p->noutputs != 1) {
    snprintf(error, error_size, "CAddOne takes one input and one output");
    return 1;
  }
  p->outputs[0].rank = p->inputs[0].rank;
  memcpy(p->outputs[0].dims, p->inputs[0].dims, sizeof p->outputs[0].dims);
  return 0;
}

static int32_t fail(void *op_data, const nnrt_plugin_kernel_params *p, char *error, size_t error_size) {
  (void)p;
  snprintf(error, error_size, "deliberate failure (op_data says %s)", (const char *)op_data);
  return 7;
}

static const char fail_data[] = "hello";
static const nnrt_plugin_op ops[] = {
    {"CAddOne", add_one, add_one_shape, NULL},
    {"CFail", fail, NULL, (void *)fail_data},
};

uint32_t nnrt_plugin_register(const nnrt_plugin_host *host, nnrt_plugin_info *info) {
  if (host == NULL || info == NULL || host->abi_version != HOST_VERSION) return 0;
  if (host->log) host->log(NNRT_PLUGIN_LOG_INFO, "example C plugin registering");
  info->abi_version = PLUGIN_VERSION;
  info->name = "c-example";
  info->ops = ops;
  info->nops = sizeof ops / sizeof ops[0];
  return PLUGIN_VERSION;
}
