#include "access/grpc_tls.h"

#include <grpcpp/security/tls_certificate_provider.h>
#include <grpcpp/security/tls_credentials_options.h>

namespace roced::access {

std::shared_ptr<grpc::ServerCredentials> ServerTlsCredentials(const TlsFiles& files,
                                                             unsigned reload_interval_seconds) {
  auto provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
      files.key, files.cert, files.ca, reload_interval_seconds);
  grpc::experimental::TlsServerCredentialsOptions options(provider);
  options.watch_root_certs();
  options.watch_identity_key_cert_pairs();
  options.set_cert_request_type(GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
  return grpc::experimental::TlsServerCredentials(options);
}

std::shared_ptr<grpc::ChannelCredentials> ClientTlsCredentials(const TlsFiles& files) {
  std::shared_ptr<grpc::experimental::FileWatcherCertificateProvider> provider;
  if (files.cert.empty()) {
    provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
        files.ca, kTlsReloadIntervalSeconds);
  } else {
    provider = std::make_shared<grpc::experimental::FileWatcherCertificateProvider>(
        files.key, files.cert, files.ca, kTlsReloadIntervalSeconds);
  }
  grpc::experimental::TlsChannelCredentialsOptions options;
  options.set_certificate_provider(provider);
  options.watch_root_certs();
  if (!files.cert.empty()) options.watch_identity_key_cert_pairs();
  options.set_verify_server_certs(true);
  return grpc::experimental::TlsCredentials(options);
}

}  // namespace roced::access
