# Installs the systemd unit and the node's config files (packaging.cmake
# says which and where). Runs when installing: CMAKE_INSTALL_PREFIX is this
# install's prefix, and file(INSTALL) adds DESTDIR (cpack's staging tree).
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(etc /etc)
else()
  set(etc "${CMAKE_INSTALL_PREFIX}/etc")
endif()

# systemd/roced.service and roced.env name the package's paths; another
# prefix gets its own. A unit that no longer names them stops the install
# rather than install a unit that starts a binary that is not there.
file(READ "${ROCED_SOURCE_DIR}/systemd/roced.service" unit)
foreach(path "ExecStart=/usr/bin/roced " "/etc/roced/roced.yaml" "/etc/roced/roced.env")
  string(FIND "${unit}" "${path}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "systemd/roced.service has no '${path}': update ${CMAKE_CURRENT_LIST_FILE}")
  endif()
endforeach()
# Written per destination: cpack and a `cmake --install --prefix` of the
# same build may run at once.
string(MD5 key "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}")
set(out "${ROCED_BINARY_DIR}/packaging/installed-${key}")
foreach(name roced.service roced.env)
  file(READ "${ROCED_SOURCE_DIR}/systemd/${name}" text)
  string(REPLACE "ExecStart=/usr/bin/roced " "ExecStart=${CMAKE_INSTALL_PREFIX}/bin/roced " text "${text}")
  string(REPLACE "/etc/roced/" "${etc}/roced/" text "${text}")
  file(WRITE "${out}/${name}" "${text}")
endforeach()

file(INSTALL DESTINATION "${CMAKE_INSTALL_PREFIX}/lib/systemd/system" TYPE FILE FILES "${out}/roced.service")
file(INSTALL DESTINATION "${etc}/roced" TYPE FILE FILES "${out}/roced.env")
file(INSTALL DESTINATION "${etc}/roced" TYPE FILE RENAME roced.yaml
     FILES "${ROCED_SOURCE_DIR}/deploy/examples/minimal.yaml")
