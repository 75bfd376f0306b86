#!/bin/sh
# Postfix's configuration for deploy/compose.yaml, written afresh at each start from
# deploy/postfix/ (docs/postfix.md): the relay domain's mail to maskmail's smtp service,
# rspamd's milter, the forwards accepted from maskmail's network on port 10025. Then
# the command (by default Postfix in the foreground).
#   RELAY_DOMAIN   the relay domain                              (required)
#   MAIL_HOSTNAME  Postfix's myhostname, the MX target            (required)
#   MAIL_NETWORKS  who may hand Postfix forwards on 10025: maskmail's network (required)
#   MASKMAIL_HOST  maskmail's smtp service (2525, policy 10027)   (default smtp)
#   RSPAMD_HOST    rspamd's milter (11332)                        (default rspamd)
set -eu
: "${RELAY_DOMAIN:?set RELAY_DOMAIN}" "${MAIL_HOSTNAME:?set MAIL_HOSTNAME}"
: "${MAIL_NETWORKS:?set MAIL_NETWORKS}"
MASKMAIL_HOST=${MASKMAIL_HOST:-smtp}
RSPAMD_HOST=${RSPAMD_HOST:-rspamd}
share=/usr/local/share/maskmail
# Debian's own files first, as the package left them, so a restart starts afresh.
cp "$share/debian/main.cf" "$share/debian/master.cf" /etc/postfix/
postconf -e "myhostname = $MAIL_HOSTNAME" "mydestination = \$myhostname, localhost" \
  "maillog_file = /dev/stdout" "inet_protocols = ipv4" \
  "smtp_tls_security_level = may" "smtp_tls_protocols = >=TLSv1.2"
# The peers are other containers, found by name, not on loopback.
sed -e "s/relay\.example\.com/$RELAY_DOMAIN/g" \
    -e "s/\[127\.0\.0\.1\]:2525/[$MASKMAIL_HOST]:2525/g" \
    -e "s/inet:127\.0\.0\.1:10027/inet:$MASKMAIL_HOST:10027/g" \
    -e "s/inet:127\.0\.0\.1:11332/inet:$RSPAMD_HOST:11332/g" \
    "$share/main.cf" >> /etc/postfix/main.cf
postconf -MX smtp/inet
sed -e "s/^127\.0\.0\.1:10025 inet/10025     inet/" \
    -e "s|-o mynetworks=127\.0\.0\.0/8|-o mynetworks=$MAIL_NETWORKS|" \
    "$share/master.cf" >> /etc/postfix/master.cf
# The container is the confinement: no chroot, which would need copies of /etc.
postconf -F '*/*/chroot = n'
# STARTTLS on the relay's certificate (docs/deploy.md, step 5) once it exists.
cert=/etc/letsencrypt/live/$RELAY_DOMAIN
if [ -r "$cert/fullchain.pem" ] && [ -r "$cert/privkey.pem" ]; then
  postconf -e "smtpd_tls_cert_file = $cert/fullchain.pem" "smtpd_tls_key_file = $cert/privkey.pem" \
    "smtpd_tls_security_level = may" "smtpd_tls_protocols = >=TLSv1.2"
else
  postconf -e "smtpd_tls_security_level = none"
  echo "maskmail-postfix: no certificate in $cert: STARTTLS is not offered" >&2
fi
postfix check
exec "$@"
