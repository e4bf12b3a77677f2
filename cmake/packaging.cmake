# Debian packages (CPack's DEB generator): scripts/package.sh builds them.
#
# Two packages, as Debian splits a library:
#   redbloom         /usr/bin/redbloom and /usr/bin/redbloomd, their man
#                    pages, the systemd unit, /etc/redbloom/redbloomd.json
#                    (a conffile) and the docs. Depends on the shared
#                    libraries the binaries link, computed by dpkg-shlibdeps.
#   libredbloom-dev  libredbloom.a, the headers and the CMake package files.
#                    A static library carries its private dependencies, so
#                    this one depends on their -dev packages (hiredis through
#                    pkg-config, HighwayHash, zlib), which a server running redbloomd
#                    should not have to install.
# The split follows the install components "runtime" and "dev".

# Services and configuration, in the runtime component.
if(TARGET redbloomd)
  # /etc for a /usr prefix (the package, `cmake --install --prefix X/usr`),
  # else PREFIX/etc, decided when installing: CPack installs into a staging
  # copy of /usr, which a configure-time absolute path would miss.
  install(CODE [[
    if(CMAKE_INSTALL_PREFIX MATCHES "/usr/?$")
      set(REDBLOOM_ETC_FROM_PREFIX "../etc")
    else()
      set(REDBLOOM_ETC_FROM_PREFIX "etc")
    endif()
  ]] COMPONENT runtime)
  # The token in it is a secret once set: root only (systemd reads it as root
  # and hands it to the service as a credential).
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/redbloomd.json
          DESTINATION "\${REDBLOOM_ETC_FROM_PREFIX}/redbloom"
          PERMISSIONS OWNER_READ OWNER_WRITE COMPONENT runtime)
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/redbloomd.service
          DESTINATION lib/systemd/system COMPONENT runtime)
  install(FILES ${PROJECT_SOURCE_DIR}/README.md ${PROJECT_SOURCE_DIR}/docs/http-api.md
                ${PROJECT_SOURCE_DIR}/docs/openapi.json
          DESTINATION ${CMAKE_INSTALL_DATAROOTDIR}/doc/redbloom COMPONENT runtime)
  if(TARGET redbloom_cli)
    add_subdirectory(${PROJECT_SOURCE_DIR}/man ${PROJECT_BINARY_DIR}/man)
  endif()
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME redbloom)
set(CPACK_PACKAGE_VENDOR redbloom)
set(CPACK_PACKAGE_CONTACT "redbloom developers <redbloom@localhost>")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_PRE_BUILD_SCRIPTS ${PROJECT_SOURCE_DIR}/cmake/strip_static_libs.cmake)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL runtime dev)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Debian's tools compute the shared-library dependencies from the binaries.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS OFF)

set(CPACK_DEBIAN_RUNTIME_PACKAGE_NAME redbloom)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SECTION net)
# The first line is the synopsis; CPack indents the rest and turns empty
# lines into the " ." paragraph breaks of debian/control.
set(CPACK_DEBIAN_RUNTIME_DESCRIPTION
    "Bloom filters shared by Java and C++ services: CLI and HTTP service
redbloom keeps Bloom filters in memory, in local memory-mapped files or in
plain Redis (no modules), byte-compatible with Guava's BloomFilter and the
Java SETBIT/GETBIT helper. A store error is an error, never an absent item.

This package holds the redbloom CLI and redbloomd, the HTTP/JSON service,
with a hardened systemd unit.")
# deb-systemd-helper and deb-systemd-invoke, used by the maintainer scripts;
# the shared libraries are appended by dpkg-shlibdeps.
set(CPACK_DEBIAN_RUNTIME_PACKAGE_DEPENDS "init-system-helpers (>= 1.54~)")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_SUGGESTS "redis-server")
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_EXTRA
    ${PROJECT_SOURCE_DIR}/packaging/debian/conffiles ${PROJECT_SOURCE_DIR}/packaging/debian/postinst
    ${PROJECT_SOURCE_DIR}/packaging/debian/prerm ${PROJECT_SOURCE_DIR}/packaging/debian/postrm)
set(CPACK_DEBIAN_RUNTIME_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEBIAN_DEV_PACKAGE_NAME libredbloom-dev)
set(CPACK_DEBIAN_DEV_PACKAGE_SECTION libdevel)
set(CPACK_DEBIAN_DEV_DESCRIPTION
    "Bloom filters shared by Java and C++ services: C++ library
redbloom keeps Bloom filters in memory, in local memory-mapped files or in
plain Redis (no modules), byte-compatible with Guava's BloomFilter.

This package holds the static library, its C++20 headers and the CMake
package: find_package(redbloom) and link redbloom::redbloom.")
# What redbloomConfig.cmake finds and a static libredbloom.a links: not
# computable from the archive, so listed here.
set(CPACK_DEBIAN_DEV_PACKAGE_DEPENDS "libhiredis-dev, libssl-dev, libhighwayhash-dev, zlib1g-dev, pkg-config")

include(CPack)
