{{/* The pod template of the Deployment and of the embedded StatefulSet. */}}
{{- define "claimcheck.podTemplate" -}}
metadata:
  labels:
    {{- include "claimcheck.labels" . | nindent 4 }}
    {{- with .Values.podLabels }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
  annotations:
    # A changed config rolls the pods: serve reads it only at start.
    checksum/config: {{ include (print $.Template.BasePath "/configmap.yaml") . | sha256sum }}
    {{- with .Values.podAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
spec:
  {{- with .Values.serviceAccountName }}
  serviceAccountName: {{ . }}
  {{- end }}
  {{- with .Values.imagePullSecrets }}
  imagePullSecrets:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  # The server calls no Kubernetes API.
  automountServiceAccountToken: false
  terminationGracePeriodSeconds: {{ .Values.terminationGracePeriodSeconds }}
  securityContext:
    {{- toYaml .Values.podSecurityContext | nindent 4 }}
  containers:
    - name: claimcheck
      image: "{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}"
      imagePullPolicy: {{ .Values.image.pullPolicy }}
      args: [serve, --config, /etc/claimcheck/claimcheck.yaml]
      ports:
        - name: http
          containerPort: 8080
          protocol: TCP
        - name: metrics
          containerPort: {{ .Values.metrics.port }}
          protocol: TCP
      env:
        - name: CLAIMCHECK_LISTEN
          value: ":8080"
        # /metrics on a port of its own, never on the API port (ADR 0271);
        # the NetworkPolicy keeps it to the scrapers.
        - name: CLAIMCHECK_METRICS__LISTEN
          value: ":{{ .Values.metrics.port }}"
        {{- range $name, $ref := .Values.secretEnv }}
        - name: {{ $name }}
          valueFrom:
            secretKeyRef:
              name: {{ required (printf "secretEnv.%s.name: the Secret to read" $name) $ref.name }}
              key: {{ required (printf "secretEnv.%s.key: the key in Secret %s" $name $ref.name) $ref.key }}
              {{- if $ref.optional }}
              optional: true
              {{- end }}
        {{- end }}
        {{- range $name, $value := .Values.env }}
        - name: {{ $name }}
          value: {{ $value | toString | quote }}
        {{- end }}
      livenessProbe:
        {{- toYaml .Values.livenessProbe | nindent 8 }}
      readinessProbe:
        {{- toYaml .Values.readinessProbe | nindent 8 }}
      startupProbe:
        {{- toYaml .Values.startupProbe | nindent 8 }}
      resources:
        {{- toYaml .Values.resources | nindent 8 }}
      securityContext:
        {{- toYaml .Values.securityContext | nindent 8 }}
      volumeMounts:
        - name: config
          mountPath: /etc/claimcheck
          readOnly: true
        {{- if .Values.embedded.enabled }}
        - name: data
          mountPath: /var/lib/claimcheck/data
        {{- end }}
  volumes:
    - name: config
      configMap:
        name: {{ include "claimcheck.fullname" . }}
  {{- with .Values.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.topologySpreadConstraints }}
  topologySpreadConstraints:
    {{- toYaml . | nindent 4 }}
  {{- end }}
{{- end -}}
