{{/* Object names follow Volcano's chart: <release>-scheduler, <release>-scheduler-configmap,
     <release>-scheduler-service. With release name "volcano" they are Volcano's own names. */}}
{{- define "vc-scheduler.name" -}}
{{- printf "%s-scheduler" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "vc-scheduler.configmapName" -}}
{{- if .Values.custom.scheduler_existing_configmap -}}
{{- .Values.custom.scheduler_existing_configmap -}}
{{- else -}}
{{- printf "%s-scheduler-configmap" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "vc-scheduler.schedulerName" -}}
{{- .Values.custom.scheduler_name | default "volcano" -}}
{{- end -}}

{{/* The pod selector: "app: <release>-scheduler", Volcano's "app: volcano-scheduler" for
     release "volcano", distinct for any other release (e.g. a shadow install). */}}
{{- define "vc-scheduler.selectorLabels" -}}
app: {{ include "vc-scheduler.name" . }}
{{- end -}}

{{- define "vc-scheduler.labels" -}}
{{ include "vc-scheduler.selectorLabels" . }}
app.kubernetes.io/name: vc-scheduler
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: scheduler
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- with .Values.custom.common_labels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "vc-scheduler.image" -}}
{{- $tag := .Values.basic.scheduler_image_tag_version | default .Values.basic.image_tag_version | default .Chart.AppVersion -}}
{{- if .Values.basic.image_registry -}}
{{- printf "%s/%s:%s" .Values.basic.image_registry .Values.basic.scheduler_image_name $tag -}}
{{- else -}}
{{- printf "%s:%s" .Values.basic.scheduler_image_name $tag -}}
{{- end -}}
{{- end -}}
