# Certify the reference gateway at Full over stdio, and keep every report.
npx turnspec certify --gateway-cmd "npx turnspec serve --stdio --memory --provider-url {provider_url} --question-timeout-ms {question_timeout_ms}" \
  --json .turnspec/certify/report.json --junit .turnspec/certify/report.xml --html .turnspec/certify/report.html \
  --certificate .turnspec/certify/certificate.json --badge .turnspec/certify/badge.json
