#include "comm/tls.h"

#include "core/file_util.h"

namespace shoal {

TlsIdentity TlsIdentityFor(const std::string& cert_dir, const std::string& role, int id) {
  if (cert_dir.empty()) return {};
  std::string base = cert_dir + "/" + role + "-" + std::to_string(id);
  return {cert_dir + "/ca.pem", base + ".pem", base + ".key", ""};
}

std::string ServerCertificateName(int id) { return "server-" + std::to_string(id); }

bool IsTlsEndpoint(const std::string& endpoint) { return endpoint.rfind("tls+tcp://", 0) == 0; }

Status TlsConfigFor(const std::string& endpoint, const TlsIdentity& id, bool server,
                    nng_tls_config** config) {
  *config = nullptr;
  if (!IsTlsEndpoint(endpoint)) return Status::Ok();
  if (!id.enabled())
    return Status::InvalidArgument("'" + endpoint + "' is a TLS endpoint: the job needs cluster.tls_dir");
  std::string ca, cert, key;
  SHOAL_RETURN_IF_ERROR(ReadFile(id.ca_file, &ca));
  SHOAL_RETURN_IF_ERROR(ReadFile(id.cert_file, &cert));
  SHOAL_RETURN_IF_ERROR(ReadFile(id.key_file, &key));
  nng_tls_config* cfg = nullptr;
  int rv = nng_tls_config_alloc(&cfg, server ? NNG_TLS_MODE_SERVER : NNG_TLS_MODE_CLIENT);
  if (rv != 0) return Status::IOError(std::string("cannot set up TLS: ") + nng_strerror(rv));
  auto fail = [&](const std::string& what) {
    nng_tls_config_free(cfg);
    return Status::InvalidArgument(what + ": " + nng_strerror(rv));
  };
  if ((rv = nng_tls_config_ca_chain(cfg, ca.c_str(), nullptr)) != 0)
    return fail("'" + id.ca_file + "' is not a usable CA certificate");
  if ((rv = nng_tls_config_own_cert(cfg, cert.c_str(), key.c_str(), nullptr)) != 0)
    return fail("'" + id.cert_file + "' and '" + id.key_file + "' are not a usable certificate and key");
  if ((rv = nng_tls_config_auth_mode(cfg, NNG_TLS_AUTH_MODE_REQUIRED)) != 0)
    return fail("TLS authentication");
  if (!server && (rv = nng_tls_config_server_name(cfg, id.server_name.c_str())) != 0)
    return fail("TLS server name '" + id.server_name + "'");
  *config = cfg;
  return Status::Ok();
}

}  // namespace shoal
