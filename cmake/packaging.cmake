# SPDX-License-Identifier: MIT
# The Debian package (CPack DEB): `cpack --config build/default/CPackConfig.cmake`
# in a configured and built tree writes sfunwind_VERSION-1_ARCH.deb. It holds
# what `cmake --install --prefix /usr` installs, the same files in the same
# places: the CLI, the core libraries with their headers and CMake config, the
# GDB bridge with its auto-load file in /etc/gdb/gdbinit.d, and the LLDB
# plugin in /usr/lib/lldb/plugins (the folder LLDB 19 and 23 scan).
#
# One package for Debian 12 and sid: build it on Debian 12. Its shared
# libraries are ones both releases have (libc6, libstdc++6, libgcc-s1, and
# libelf1/libdw1, which sid's libelf1t64/libdw1t64 provide); Capstone, whose
# soname differs (libcapstone4 / libcapstone5), is linked in. The GDB bridge
# reaches Python through GDB only (ctypes), so GDB 13's Python 3.11 and
# GDB 18's 3.14 both load it; the LLDB plugin uses the SB API without linking
# liblldb, so LLDB 19 and 23 both load it (tests/package/test_package.sh
# installs this one file in both).
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME sfunwind)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "SFrame unwinding for GDB, LLDB and the command line")
set(CPACK_PACKAGE_DESCRIPTION
  "sfunwind makes GDB and LLDB unwind stacks with SFrame (the .sframe section GNU as/ld and LLVM
emit) and checks unwinds against DWARF CFI. GDB and LLDB load it by themselves; `sframe disable`
in ~/.gdbinit or `sframe cover --off` in ~/.lldbinit turns it off for one user. Also the
sfunwind command-line tool and the sfunwind C++ libraries (headers, CMake config).")
set(CPACK_PACKAGE_CONTACT "sfunwind maintainers <sfunwind@localhost>")
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
# Absolute destinations (/etc/gdb/gdbinit.d) need DESTDIR staging.
set(CPACK_SET_DESTDIR ON)
# Without debug info (RelWithDebInfo: 155 MB installed, 12 MB stripped); the same
# as `cmake --install --strip`.
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# Depends: computed from the shipped binaries' DT_NEEDED by dpkg-shlibdeps.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# The debuggers are what it plugs into, but each user may want only one; the
# -dev packages are what find_package(sfunwind) needs (cmake/sfunwindConfig.cmake.in).
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "gdb")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS
  "lldb-19 | lldb-23, libboost-dev, libelf-dev, libdw-dev, libcapstone-dev, pkg-config")
# prerm: GDB run as root writes the bridge's bytecode (__pycache__) next to
# it; dpkg does not know those files, and would leave them and their folder.
if(SFUNWIND_GDB_DIR AND TARGET sfunwind_gdb)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/debian/prerm.in ${PROJECT_BINARY_DIR}/debian/prerm @ONLY)
  set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA ${PROJECT_BINARY_DIR}/debian/prerm)
endif()
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
