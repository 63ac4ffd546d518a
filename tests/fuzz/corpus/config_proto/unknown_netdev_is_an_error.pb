
roced/v1
NodeConfig"

eth9¨F