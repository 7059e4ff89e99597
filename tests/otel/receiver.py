"""An OTLP/HTTP traces receiver for tests/it/otel.rs: decodes each export with the official
OpenTelemetry protobuf package (opentelemetry-proto), independent of cua's encoder, and appends
one JSON line per request to the file named by its argument. Prints its port, then serves on
loopback until it is killed."""

import http.server
import json
import sys

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

OUT = sys.argv[1]


def value(any_value):
    kind = any_value.WhichOneof("value")
    return getattr(any_value, kind) if kind else None


class Receiver(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if self.path != "/v1/traces":
            self.send_error(404)
            return
        if self.headers.get("Content-Type") != "application/x-protobuf":
            self.send_error(415)
            return
        request = ExportTraceServiceRequest.FromString(body)
        spans = []
        services = []
        for resource in request.resource_spans:
            services += [value(a.value) for a in resource.resource.attributes if a.key == "service.name"]
            for scope in resource.scope_spans:
                for span in scope.spans:
                    spans.append({
                        "name": span.name,
                        "trace_id": span.trace_id.hex(),
                        "span_id": span.span_id.hex(),
                        "parent": span.parent_span_id.hex(),
                        "kind": span.kind,
                        "start": span.start_time_unix_nano,
                        "end": span.end_time_unix_nano,
                        "status": span.status.code,
                        "attributes": {a.key: value(a.value) for a in span.attributes},
                    })
        with open(OUT, "a", encoding="utf-8") as out:
            out.write(json.dumps({"services": services, "spans": spans, "raw": body.hex()}) + "\n")
        reply = ExportTraceServiceResponse().SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


server = http.server.HTTPServer(("127.0.0.1", 0), Receiver)
print(server.server_address[1], flush=True)
server.serve_forever()
