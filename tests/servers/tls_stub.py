"""An HTTPS server on 127.0.0.1 that answers every request as S3 answers for a missing key
(404 NoSuchKey), with the certificate of tests/fixtures/tls (127.0.0.1, signed by the
test CA ca.pem). For tests/remote/tls.rs: whether the client trusts it, not what it stores.

    usage: python3 tls_stub.py PORT CERT KEY    (prints "ready", then each request's path)
"""

import http.server
import ssl
import sys

BODY = (
    b'<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code>'
    b"<Message>The specified key does not exist.</Message></Error>"
)


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        print(self.command, self.path, flush=True)
        self.send_response(404)
        self.send_header("Content-Type", "application/xml")
        self.send_header("Content-Length", str(len(BODY)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(BODY)

    do_HEAD = do_GET

    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
context.load_cert_chain(sys.argv[2], sys.argv[3])
server.socket = context.wrap_socket(server.socket, server_side=True)
print("ready", flush=True)
server.serve_forever()
