/* Eight sessions on eight threads at once, each loading, preparing and running the same model on
 * the same input (some with nnfw_run, some with nnfw_run_async): all outputs must be identical.
 *
 *   threads MODEL [INPUT.npy] */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "nnfw_internal.h"

#define THREADS 8
#define RUNS 3

typedef struct
{
  const char *model;
  const npy_array *input; /* NULL: a fixed pattern */
  int id;
  unsigned char *output;
  size_t output_size;
  int failures;
} job;

static int check(job *j, nnfw_session *s, NNFW_STATUS st, const char *what)
{
  if (st == NNFW_STATUS_NO_ERROR)
    return 0;
  char msg[512] = "";
  nnfw_get_last_error_message(s, msg, sizeof msg);
  fprintf(stderr, "thread %d: %s returned %d: %s\n", j->id, what, st, msg);
  j->failures++;
  return 1;
}

static void *work(void *arg)
{
  job *j = arg;
  nnfw_session *s = NULL;
  if (nnfw_create_session(&s) != NNFW_STATUS_NO_ERROR)
  {
    j->failures++;
    return NULL;
  }
  unsigned char *in = NULL;
  if (check(j, s, nnfw_load_model_from_file(s, j->model), "load") ||
      check(j, s, nnfw_set_config(s, "NUM_THREADS", "1"), "set_config") ||
      check(j, s, nnfw_prepare(s), "prepare"))
    goto done;
  nnfw_tensorinfo ti, to;
  if (check(j, s, nnfw_input_tensorinfo(s, 0, &ti), "input_tensorinfo") ||
      check(j, s, nnfw_output_tensorinfo(s, 0, &to), "output_tensorinfo"))
    goto done;
  size_t in_bytes = tensor_bytes(&ti);
  in = malloc(in_bytes);
  if (j->input && j->input->size == in_bytes)
    memcpy(in, j->input->data, in_bytes);
  else if (ti.dtype == NNFW_TYPE_TENSOR_FLOAT32)
    for (size_t i = 0; i < in_bytes / 4; i++)
      ((float *)in)[i] = (float)((i * 37) % 255) / 255.0f;
  else
    for (size_t i = 0; i < in_bytes; i++)
      in[i] = (unsigned char)(i * 37);
  j->output_size = tensor_bytes(&to);
  j->output = calloc(1, j->output_size);
  if (check(j, s, nnfw_set_input(s, 0, ti.dtype, in, in_bytes), "set_input") ||
      check(j, s, nnfw_set_output(s, 0, to.dtype, j->output, j->output_size), "set_output"))
    goto done;
  for (int r = 0; r < RUNS; r++)
  {
    if ((j->id + r) % 2 == 0)
    {
      if (check(j, s, nnfw_run(s), "run"))
        goto done;
    }
    else if (check(j, s, nnfw_run_async(s), "run_async") || check(j, s, nnfw_await(s), "await"))
      goto done;
  }
done:
  nnfw_close_session(s);
  free(in);
  return NULL;
}

int main(int argc, char **argv)
{
  if (!usage_ok(argc, argv, 1, INT_MAX, "MODEL [INPUT.npy]"))
    return 1;
  npy_array input;
  int have_input = argc > 2 && npy_read(argv[2], &input) == 0;
  pthread_t threads[THREADS];
  job jobs[THREADS];
  for (int i = 0; i < THREADS; i++)
  {
    jobs[i] = (job){argv[1], have_input ? &input : NULL, i, NULL, 0, 0};
    if (pthread_create(&threads[i], NULL, work, &jobs[i]) != 0)
    {
      fprintf(stderr, "pthread_create failed\n");
      return 1;
    }
  }
  for (int i = 0; i < THREADS; i++)
    pthread_join(threads[i], NULL);

  int failures = 0;
  for (int i = 0; i < THREADS; i++)
  {
    failures += jobs[i].failures;
    if (!jobs[i].output || jobs[i].output_size != jobs[0].output_size ||
        memcmp(jobs[i].output, jobs[0].output, jobs[0].output_size) != 0)
    {
      fprintf(stderr, "thread %d: output differs from thread 0's\n", i);
      failures++;
    }
  }
  for (int i = 0; i < THREADS; i++)
    free(jobs[i].output);
  if (have_input)
    free(input.data);
  if (failures)
    fprintf(stderr, "%d failure(s)\n", failures);
  else
    printf("threads: %d sessions gave identical outputs (%zu bytes)\n", THREADS, jobs[0].output_size);
  return failures ? 1 : 0;
}
