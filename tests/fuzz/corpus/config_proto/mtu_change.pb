
roced/v1
NodeConfig"

eth0¨F