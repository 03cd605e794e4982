{{- define "coffer.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "coffer.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "coffer.labels" -}}
app.kubernetes.io/name: {{ include "coffer.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "coffer.selectorLabels" -}}
app.kubernetes.io/name: {{ include "coffer.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "coffer.validate" -}}
{{- if not (has .Values.mode (list "embedded" "scaleout")) -}}
{{- fail (printf "mode must be embedded or scaleout, not %q" .Values.mode) -}}
{{- end -}}
{{- if and (eq .Values.mode "scaleout") (not .Values.scaleout.existingSecret) -}}
{{- fail "mode scaleout needs scaleout.existingSecret (COFFER_META, COFFER_BLOB, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, server.key)" -}}
{{- end -}}
{{- end -}}

{{/* The pod: the same in both shapes but for the data volume and the store settings. */}}
{{- define "coffer.podTemplate" -}}
metadata:
  labels:
    {{- include "coffer.selectorLabels" . | nindent 4 }}
  {{- with .Values.podAnnotations }}
  annotations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
spec:
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  automountServiceAccountToken: false
  # A drained node finishes its uploads in flight (coffer serve stops
  # gracefully on SIGTERM).
  terminationGracePeriodSeconds: 90
  securityContext:
    runAsNonRoot: true
    runAsUser: 65532
    runAsGroup: 65532
    fsGroup: 65532
    seccompProfile: {type: RuntimeDefault}
  containers:
    - name: coffer
      image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      args: ["serve", "--listen", "0.0.0.0:{{ .Values.service.filePort }}", "--s3-listen", "0.0.0.0:{{ .Values.service.s3Port }}"]
      env:
        - {name: COFFER_DATA, value: /data}
        - {name: GOMEMLIMIT, value: {{ .Values.goMemLimit | quote }}}
        {{- if eq .Values.mode "scaleout" }}
        - {name: COFFER_SERVER_KEY_FILE, value: /run/secrets/coffer/server.key}
        - {name: COFFER_CACHE_SIZE, value: {{ .Values.scaleout.cacheSize | quote }}}
        {{- range $k := list "COFFER_META" "COFFER_BLOB" "AWS_ACCESS_KEY_ID" "AWS_SECRET_ACCESS_KEY" }}
        - name: {{ $k }}
          valueFrom: {secretKeyRef: {name: {{ $.Values.scaleout.existingSecret }}, key: {{ $k }}}}
        {{- end }}
        {{- end }}
        {{- if .Values.metrics.tokenSecret }}
        - name: COFFER_METRICS_TOKEN
          valueFrom: {secretKeyRef: {name: {{ .Values.metrics.tokenSecret }}, key: {{ .Values.metrics.tokenKey }}}}
        {{- end }}
        {{- range $k, $v := .Values.env }}
        - {name: {{ $k }}, value: {{ $v | quote }}}
        {{- end }}
      ports:
        - {name: http, containerPort: {{ .Values.service.filePort }}}
        - {name: s3, containerPort: {{ .Values.service.s3Port }}}
      startupProbe:
        httpGet: {path: /healthz, port: http}
        periodSeconds: 2
        failureThreshold: 60
      livenessProbe:
        httpGet: {path: /healthz, port: http}
        periodSeconds: 10
        timeoutSeconds: 5
      readinessProbe:
        httpGet: {path: /readyz, port: http}
        periodSeconds: 5
        timeoutSeconds: 5
      securityContext:
        allowPrivilegeEscalation: false
        readOnlyRootFilesystem: true
        capabilities: {drop: [ALL]}
      resources:
        {{- toYaml .Values.resources | nindent 8 }}
      volumeMounts:
        - {name: data, mountPath: /data}
        - {name: tmp, mountPath: /tmp}
        {{- if eq .Values.mode "scaleout" }}
        - {name: server-key, mountPath: /run/secrets/coffer, readOnly: true}
        {{- end }}
  volumes:
    - name: tmp
      emptyDir: {}
    {{- if eq .Values.mode "scaleout" }}
    - name: data # the node's blob read cache only: nothing durable
      emptyDir: {sizeLimit: {{ .Values.scaleout.cacheVolumeSize }}}
    - name: server-key
      secret:
        secretName: {{ .Values.scaleout.existingSecret }}
        items: [{key: server.key, path: server.key}]
        # root:fsGroup, group-readable (the pod's user reads it through the
        # fsGroup): coffer accepts u=r,g=r only on a root-owned file.
        defaultMode: 0440
    {{- end }}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
