#!/usr/bin/env python3
"""Serves a GGUF model with llama.cpp's server as embedded in the PyPI wheel
xllamacpp (0.2.9, prebuilt, CPU only), for clix's end-to-end test.

    OMP_WAIT_POLICY=PASSIVE python3 scripts/llm/serve-xllamacpp.py MODEL.gguf \
        [--host 127.0.0.1] [--port 8080] [--ctx 8192] [--threads 2] [--temp T]

OpenAI-compatible /v1/chat/completions with tools (the GGUF's own chat
template), and /health. Runs until SIGTERM or SIGINT.
"""

import argparse
import signal
import sys
import threading

import xllamacpp as xlc

ap = argparse.ArgumentParser()
ap.add_argument("model")
ap.add_argument("--host", default="127.0.0.1")
ap.add_argument("--port", type=int, default=8080)
ap.add_argument("--ctx", type=int, default=8192)
ap.add_argument("--threads", type=int, default=2)
ap.add_argument("--temp", type=float, default=None, help="default sampling temperature of requests")
a = ap.parse_args()

p = xlc.CommonParams()
p.model.path = a.model
p.model_alias = "local"
p.hostname = a.host
p.port = a.port
p.n_ctx = a.ctx
p.n_parallel = 1
p.use_jinja = True  # OpenAI `tools` need the jinja template and its tool-call parser
p.cpuparams.n_threads = a.threads
p.cpuparams_batch.n_threads = a.threads
p.n_gpu_layers = 0
p.warmup = False
p.offline = True  # never reach for a model hub
if a.temp is not None:
    p.sampling.temp = a.temp
server = xlc.Server(p)
print("listening on", server.listening_address, flush=True)
stop = threading.Event()
signal.signal(signal.SIGTERM, lambda *_: stop.set())
signal.signal(signal.SIGINT, lambda *_: stop.set())
stop.wait()
sys.exit(0)
