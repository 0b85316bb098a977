package sim

import "syscall"

// ipBindAddressNoPort is IP_BIND_ADDRESS_NO_PORT (linux/in.h): with a source
// address bound, the port is chosen at connect time, per destination, so
// each source address offers its whole ephemeral range to every hub address.
const ipBindAddressNoPort = 24

func bindNoPort(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_IP, ipBindAddressNoPort, 1)
	})
	if err != nil {
		return err
	}
	_ = serr // an old kernel without the option still works, with fewer ports
	return nil
}
