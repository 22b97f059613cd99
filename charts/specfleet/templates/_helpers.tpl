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
{{- include "specfleet.componentSelectorLabels" (list . "operator") }}
{{- end }}

{{/* Standard labels on every object but the `helm test` pod's. */}}
{{- define "specfleet.labels" -}}
{{- include "specfleet.componentLabels" (list . "operator") }}
{{- end }}

{{/* Labels that select one component of the release; called with (list $ "<component>"). */}}
{{- define "specfleet.componentSelectorLabels" -}}
{{- $root := index . 0 -}}
app.kubernetes.io/name: {{ include "specfleet.name" $root }}
app.kubernetes.io/instance: {{ $root.Release.Name }}
app.kubernetes.io/component: {{ index . 1 }}
{{- end }}

{{/* Standard labels of one component's objects; called with (list $ "<component>"). */}}
{{- define "specfleet.componentLabels" -}}
{{- $root := index . 0 -}}
helm.sh/chart: {{ include "specfleet.chart" $root }}
{{ include "specfleet.componentSelectorLabels" . }}
app.kubernetes.io/version: {{ $root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ $root.Release.Service }}
app.kubernetes.io/part-of: specfleet
{{- with $root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The Kopf peering the replicas meet in: one per release, so two releases never take turns at one peering. */}}
{{- define "specfleet.peeringName" -}}
{{- default (include "specfleet.fullname" .) .Values.operator.peering.name }}
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
