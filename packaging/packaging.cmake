# What `cmake --install` and the Debian package put on a node besides the
# binaries (agent/ and tools/rocectl install roced, rocectl and the OpenSSL 3
# shim), and the package itself (`cpack -G DEB` in a built tree):
#
#   <prefix>/bin/roced, rocectl          <prefix>/lib/roced/lib{ssl,crypto}.so
#   <prefix>/lib/systemd/system/roced.service   its ExecStart the installed roced
#   <etc>/roced/roced.yaml   deploy/examples/minimal.yaml: observe, manage nothing
#   <etc>/roced/roced.env    systemd/roced.env: TLS and the access file commented
#                            out until their files are in place
#   <prefix>/share/doc/roced/   README.md, docs/, examples/ (deploy/examples)
#
# <etc> is /etc for the prefix /usr (the package's) and <prefix>/etc for any
# other, as GNUInstallDirs has it. It is decided when installing, not here:
# cpack installs with its own prefix (/usr) whatever prefix the build was
# configured with, and a unit must name the paths it was installed to.
# Installing does not enable or start the agent (it writes the NIC's state):
# set up /etc/roced, then `systemctl enable --now roced` (docs/operations.md).
install(CODE "set(ROCED_SOURCE_DIR \"${CMAKE_SOURCE_DIR}\")\nset(ROCED_BINARY_DIR \"${CMAKE_BINARY_DIR}\")")
install(SCRIPT ${CMAKE_CURRENT_LIST_DIR}/install_system_files.cmake)
install(FILES README.md DESTINATION share/doc/roced)
install(DIRECTORY docs/ DESTINATION share/doc/roced/docs FILES_MATCHING PATTERN "*.md")
install(DIRECTORY deploy/examples/ DESTINATION share/doc/roced/examples)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME roced)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "RoCE node agent: NIC QoS state, RDMA probes, counters")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "roced keeps a node's RoCE state where it was declared (PFC, DSCP trust and
mapping, ETS, ECN, MTU, RoCE mode and ToS, buffers, DCQCN, hugepages), probes
peer agents over RDMA, and serves state and counters over gRPC and Prometheus.
rocectl is its command line. Installing does not start the agent: see
/usr/share/doc/roced/docs/operations.md.")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "roced maintainers <roced@example.com>")
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_STRIP_FILES ON)
# Depends from the ELF files' needs (dpkg-shlibdeps, Debian's own way); the
# shim libraries in lib/roced are the package's own.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS_PRIVATE_DIRS ${CMAKE_BINARY_DIR}/lib/roced)
# The NICs' verbs drivers (libibverbs only recommends them) and the
# rdma-load-modules@ unit the service is ordered after.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "ibverbs-providers, rdma-core")
# The node's files are conffiles: an upgrade keeps the site's edits.
file(WRITE ${CMAKE_BINARY_DIR}/packaging/conffiles "/etc/roced/roced.env\n/etc/roced/roced.yaml\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${CMAKE_BINARY_DIR}/packaging/conffiles
  ${CMAKE_CURRENT_LIST_DIR}/deb/postinst ${CMAKE_CURRENT_LIST_DIR}/deb/prerm ${CMAKE_CURRENT_LIST_DIR}/deb/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
