{{/* Names and labels shared by every object of a release. */}}

{{- define "claimcheck.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The release's objects are named after it, with the chart's name added
unless the release name already contains it. */}}
{{- define "claimcheck.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "claimcheck.selectorLabels" -}}
app.kubernetes.io/name: {{ include "claimcheck.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "claimcheck.labels" -}}
{{ include "claimcheck.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* Replicas: embedded mode runs exactly one, since two pods would open
the same SQLite database; a replicaCount asking for more fails the
render rather than being ignored. */}}
{{- define "claimcheck.replicas" -}}
{{- if and .Values.embedded.enabled (ne (int .Values.replicaCount) 1) -}}
{{- fail (printf "replicaCount: %v with embedded.enabled: embedded mode runs one replica (SQLite on one volume); set replicaCount: 1, or use PostgreSQL and S3 for replicas" .Values.replicaCount) -}}
{{- end -}}
{{- .Values.replicaCount -}}
{{- end -}}

{{/* Replicas share nothing local: without embedded mode the metadata and
the storage must be PostgreSQL and S3, named in config or in the
environment. Without them every replica would open its own SQLite on a
read-only root file system; the render fails instead, saying what to set. */}}
{{- define "claimcheck.validate" -}}
{{- if not .Values.embedded.enabled -}}
{{- $vars := merge (dict) .Values.env .Values.secretEnv -}}
{{- if not (or .Values.config.metadata (hasKey $vars "CLAIMCHECK_METADATA")) -}}
{{- fail "no metadata database: set secretEnv.CLAIMCHECK_METADATA (a Secret holding the postgres:// DSN) or config.metadata, or embedded.enabled: true for one replica on SQLite (see examples/)" -}}
{{- end -}}
{{- if not (or .Values.config.storage (hasKey $vars "CLAIMCHECK_STORAGE")) -}}
{{- fail "no blob storage: set config.storage (s3://BUCKET?region=…) or env.CLAIMCHECK_STORAGE, or embedded.enabled: true for one replica on local files (see examples/)" -}}
{{- end -}}
{{- end -}}
{{- end -}}
