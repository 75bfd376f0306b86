#!/usr/bin/env bash
# Debian packages the test suite drives as real peers. Installs only what is missing.
set -euo pipefail
packages=()
# command:package pairs; extend as tests start real servers.
# nginx, openssl and systemd-analyze check the deployment files in deploy/; PgBouncer
# sits between maskmail and PostgreSQL in the scale-out test; chromium: the dashboard's
# browser tests (tests/browser) drive it through Playwright; gpg makes the tests' OpenPGP
# keys and decrypts forwards as mail clients do (maskmail itself does OpenPGP in process).
# debootstrap, podman and buildah build and run the images of deploy/ without a registry
# (tests/containers.py); docker-compose validates deploy/compose.yaml. npm installs the
# pinned Lighthouse into .tools/lighthouse (scripts/lighthouse.py, tests/browser/test_lighthouse.py).
for pair in rspamd:rspamd postfix:postfix wrk:wrk nginx:nginx openssl:openssl systemd-analyze:systemd \
  pgbouncer:pgbouncer chromium:chromium gpg:gpg debootstrap:debootstrap podman:podman \
  buildah:buildah docker-compose:docker-compose npm:npm; do
  command -v "${pair%%:*}" >/dev/null 2>&1 || packages+=("${pair##*:}")
done
# The outage test runs a private PostgreSQL cluster: it needs initdb and pg_ctl, which
# Debian keeps out of PATH.
if ! command -v initdb >/dev/null 2>&1 && ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null; then
  packages+=(postgresql)
fi
if [ ${#packages[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    # Not root: say what to install, rather than fail inside apt-get.
    echo "system-deps: the tests need these Debian packages: ${packages[*]}" >&2
    echo "system-deps: install them as root, then run make test again:" >&2
    echo "  apt-get install --no-install-recommends ${packages[*]}" >&2
    exit 1
  fi
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${packages[@]}"
fi
