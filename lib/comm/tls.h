// Mutual TLS for NNG's tls+tcp:// transport: every process presents its own
// certificate, and accepts only peers whose certificates the job's CA signed.
// Servers' certificates name them ("server-<id>"): a worker checks that it
// reached the server the plan says, not just any holder of the CA.
#pragma once

#include <nng/nng.h>
#include <nng/supplemental/tls/tls.h>

#include <string>

#include "core/status.h"

namespace shoal {

struct TlsIdentity {
  std::string ca_file;      // PEM: the job's CA
  std::string cert_file;    // PEM: this process's certificate
  std::string key_file;     // PEM: its private key
  std::string server_name;  // clients: the name the server's certificate carries
  bool enabled() const { return !ca_file.empty(); }
};

// The identity of `role` ("server" or "worker") `id` in a certificate
// directory written by scripts/make-certs.sh: DIR/ca.pem, DIR/<role>-<id>.{pem,key}.
TlsIdentity TlsIdentityFor(const std::string& cert_dir, const std::string& role, int id);
// The name a worker expects on server `id`'s certificate.
std::string ServerCertificateName(int id);

bool IsTlsEndpoint(const std::string& endpoint);

// The TLS configuration `endpoint` needs, for a dialer (server = false) or a
// listener: null for an endpoint that is not tls+tcp://, an error for one
// that is when this process has no identity. The caller frees it.
Status TlsConfigFor(const std::string& endpoint, const TlsIdentity& identity, bool server,
                    nng_tls_config** config);

}  // namespace shoal
