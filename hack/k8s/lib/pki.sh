# Certificates and kubeconfigs of the test cluster (sourced by cluster.sh).
# One CA; the API server's certificate names the control plane's address,
# loopback and the `kubernetes` Service's IP; each kubelet's names its node
# (CN system:node:NAME, its address); kube-proxy's is the user the default
# system:node-proxier binding names.

# cert NAME CN O SANS: a certificate and key signed by the CA; SANS is an
# openssl subjectAltName list ("" for a client-only certificate).
cert() {
  local d=$RUN/pki name=$1 cn=$2 o=$3 san=$4
  local ext=$d/$name.ext subj="/CN=$cn"
  if [ -n "$san" ]; then
    printf 'subjectAltName=%s\nextendedKeyUsage=serverAuth,clientAuth\n' "$san" >"$ext"
  else
    printf 'extendedKeyUsage=clientAuth\n' >"$ext"
  fi
  [ -n "$o" ] && subj="/O=$o$subj"
  openssl req -new -newkey rsa:2048 -nodes -subj "$subj" -keyout "$d/$name.key" -out "$d/$name.csr" 2>/dev/null
  openssl x509 -req -in "$d/$name.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial \
    -days 3 -extfile "$ext" -out "$d/$name.crt" 2>/dev/null
}

# kubeconfig WHO: $RUN/WHO.kubeconfig, the certificate WHO, the API server
# on the control plane's address.
kubeconfig() {
  local who=$1 d=$RUN/pki
  cat >"$RUN/$who.kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: basin-e2e
  cluster: {server: "https://$CP_IP:6443", certificate-authority: "$d/ca.crt"}
users:
- name: $who
  user: {client-certificate: "$d/$who.crt", client-key: "$d/$who.key"}
contexts:
- name: basin-e2e
  context: {cluster: basin-e2e, user: $who, namespace: default}
current-context: basin-e2e
KC
}

pki() {
  local d=$RUN/pki n
  mkdir -p "$d" && chmod 700 "$d"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3 -subj "/CN=basin-e2e-ca" \
    -keyout "$d/ca.key" -out "$d/ca.crt" 2>/dev/null
  openssl genrsa -out "$d/sa.key" 2048 2>/dev/null
  openssl rsa -in "$d/sa.key" -pubout -out "$d/sa.pub" 2>/dev/null
  cert apiserver kube-apiserver "" \
    "DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:127.0.0.1,IP:$CP_IP,IP:$KUBERNETES_SVC_IP"
  cert admin kubernetes-admin system:masters ""
  cert apiserver-kubelet kube-apiserver-kubelet-client system:masters ""
  cert controller-manager system:kube-controller-manager "" ""
  cert scheduler system:kube-scheduler "" ""
  cert kube-proxy system:kube-proxy "" ""
  for who in admin controller-manager scheduler kube-proxy; do kubeconfig "$who"; done
  for n in $(node_names); do
    cert "kubelet-$n" "system:node:$n" system:nodes "DNS:$n,IP:$(node_ip "$n")"
    kubeconfig "kubelet-$n"
  done
}
