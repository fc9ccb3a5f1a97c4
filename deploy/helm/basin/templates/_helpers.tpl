{{/*
Labels of every object the chart renders: the label the kustomize
manifests carry (app.kubernetes.io/part-of) and Helm's own.
*/}}
{{- define "basin.labels" -}}
app.kubernetes.io/part-of: basin
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end }}

{{/* An image reference from {repository, tag}. */}}
{{- define "basin.image" -}}
{{ .repository }}:{{ .tag }}
{{- end }}

{{/* imagePullPolicy, when one is set. */}}
{{- define "basin.pullPolicy" -}}
{{- with .pullPolicy }}
imagePullPolicy: {{ . }}
{{- end }}
{{- end }}

{{/* imagePullSecrets of every pod spec. */}}
{{- define "basin.pullSecrets" -}}
{{- with .Values.image.pullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/*
Placement of a component's pods: priorityClassName, tolerations,
nodeSelector, affinity, each when set.
*/}}
{{- define "basin.placement" -}}
{{- with .priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .tolerations }}
tolerations:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .nodeSelector }}
nodeSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .affinity }}
affinity:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* The kubelet root directory, without a trailing slash. */}}
{{- define "basin.kubeletDir" -}}
{{ trimSuffix "/" .Values.kubeletDir }}
{{- end }}

{{/* The node data directory (caches, state, holder socket), without a trailing slash. */}}
{{- define "basin.dataDir" -}}
{{ trimSuffix "/" .Values.dataDir }}
{{- end }}

{{/* Whether the placement webhook is served (it needs the orchestrator). */}}
{{- define "basin.webhook" -}}
{{- if and .Values.orchestration.enabled .Values.orchestration.placementWebhook.enabled }}true{{ end }}
{{- end }}
