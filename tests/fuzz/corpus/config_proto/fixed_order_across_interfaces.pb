
roced/v1
NodeConfig"

eth1¨F
"

eth0¨F
