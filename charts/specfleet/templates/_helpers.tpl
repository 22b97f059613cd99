{{/* Names, labels and small derived values shared by every template. */}}

{{- define "specfleet.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* "<release>-<chart>", or the release name when it already contains the chart name; 63 characters max. */}}
{{- define "specfleet.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "specfleet.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Immutable labels that select the operator pods. */}}
{{- define "specfleet.selectorLabels" -}}
app.kubernetes.io/name: {{ include "specfleet.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{/* Standard labels on every object. */}}
{{- define "specfleet.labels" -}}
helm.sh/chart: {{ include "specfleet.chart" . }}
{{ include "specfleet.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: specfleet
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{- define "specfleet.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "specfleet.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The image reference: a digest pins it; otherwise the tag, defaulting to the chart's appVersion. */}}
{{- define "specfleet.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* True (non-empty) when the operator watches every namespace. */}}
{{- define "specfleet.clusterwide" -}}
{{- if not .Values.operator.watchNamespaces }}true{{ end }}
{{- end }}

{{/* Namespaces that hold the default SpeculationPolicy, as a JSON list. */}}
{{- define "specfleet.policyNamespaces" -}}
{{- $namespaces := .Values.defaultPolicy.namespaces | default .Values.operator.watchNamespaces | default (list .Release.Namespace) }}
{{- toJson $namespaces }}
{{- end }}

{{/* Label selector of the engine pods the operator renders (operator/specfleet/operator/render/labels.py). */}}
{{- define "specfleet.engineSelector" -}}
app.kubernetes.io/name: specfleet-engine
{{- end }}
